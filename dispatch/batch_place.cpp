// Placing a batch: which device each upload and op runs on, the transfers that implies, and the
// segments (runs of entries on one device) each run submits.
//
// An automatic batch starts from the best single device (every op on it, when it runs them all)
// and then moves single entries, then runs of consecutive entries, to another device while that
// lowers the predicted time of the whole batch: compute of every op + every upload and read + each
// tensor moved between devices once. So a chain stays on one device unless a step, or a run of
// steps, gains more than the moves around it cost.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "backends/entries.hpp"
#include "dispatch/batch_record.hpp"
#include "dispatch/dispatcher.hpp"
#include "tensor/memory_cache.hpp"
#include "trine/error.hpp"

namespace trine::detail {
namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();
// Runs of up to k_run_max entries are tried as moves in batches of up to k_run_batch_max entries
// (each try prices the whole batch: n^2 x devices x k_run_max node visits, ~0.1 s at the limit).
constexpr std::size_t k_run_max = 16;
constexpr std::size_t k_run_batch_max = 128;

struct Candidate {
  Device device;
  Backend* backend;
};

// What the cost of a placement depends on, per entry.
struct Node {
  enum Kind { upload, op, read } kind = op;
  std::vector<double> cost;  // per candidate: compute (op) or host->device (upload); inf = cannot
  struct In {
    int producer = -1;  // the node writing a recorded storage, or -1 for an eager tensor
    const Storage* storage = nullptr;
    double bytes = 0;
    Device eager_device;  // where an eager tensor lives
  };
  std::vector<In> inputs;  // ops: what they read; reads: their source (one)
};

double bytes_of(const Tensor& t) { return static_cast<double>(dtype_bytes(t.dtype(), t.numel())); }

class Planner {
 public:
  Planner(const BatchRecord& b, std::vector<Candidate> cands)
      : cands_(std::move(cands)), profile_(dispatch::active_profile()) {
    std::map<const Storage*, int> producer;
    for (std::size_t i = 0; i < b.entries.size(); ++i) {
      Node n;
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Upload>) {
              n.kind = Node::upload;
              for (const auto& c : cands_)
                n.cost.push_back(c.backend->fits(c.device.index, x.dst->bytes())
                                     ? dispatch::predict_transfer(profile_, Device::cpu(), c.device, double(x.bytes))
                                     : k_inf);
              producer[x.dst.get()] = static_cast<int>(i);
            } else if constexpr (std::is_same_v<T, OpCall>) {
              n.kind = Node::op;
              // A write (trine::copy_into): into a tensor made outside the batch (its memory
              // exists already) or one an earlier entry produced.
              const Storage* out = x.output.storage().get();
              if (x.output.storage()->handle()) {
                writes_ = true;
                if (written_on_ && !(*written_on_ == x.output.device()))
                  throw Error(ErrorCode::unsupported, "[copy_into] a batch placed automatically writes into " +
                                                          written_on_->str() + " and " + x.output.device().str() +
                                                          ": it runs on one device when it writes; pin it");
                written_on_ = x.output.device();
              } else if (producer.count(out)) {
                writes_ = true;
              }
              const Device pin = pinned_input(x);
              for (const auto& c : cands_) {
                const bool allowed = (!pin_ || c.device == pin) && runs_on(*c.backend, c.device, x);
                n.cost.push_back(allowed ? dispatch::predict_compute(profile_, c.device, x.op, x.cost) : k_inf);
              }
              for (const auto& t : x.inputs) {
                if (!t.defined()) continue;
                auto it = producer.find(t.storage().get());
                Node::In in;
                in.storage = t.storage().get();
                if (it != producer.end()) {
                  in.producer = it->second;
                  in.bytes = static_cast<double>(t.storage()->bytes());
                } else {
                  in.bytes = bytes_of(t);
                  in.eager_device = t.device();
                }
                n.inputs.push_back(in);
              }
              producer[x.output.storage().get()] = static_cast<int>(i);
            } else if constexpr (std::is_same_v<T, Readback>) {
              n.kind = Node::read;
              Node::In in;
              in.producer = producer.at(x.src.get());
              in.storage = x.src.get();
              in.bytes = double(x.bytes);
              n.inputs.push_back(in);
            } else {
              throw Error(ErrorCode::internal, "[batch] a recorded batch holds a device copy");
            }
          },
          b.entries[i]);
      nodes_.push_back(std::move(n));
    }
  }

  // The device index of every node (reads: their source's).
  std::vector<int> plan(std::string& log) {
    const int nd = static_cast<int>(cands_.size());
    std::vector<int> best;
    double best_s = k_inf;
    // A batch that writes into a tensor runs on one device, that tensor's (when it was made outside
    // the batch): an entry elsewhere would read a copy moved once, at placement, which every later
    // run's write leaves stale.
    if (writes_) log += written_on_ ? " | writes into a tensor on " + written_on_->str() + ": all there"
                                    : std::string(" | writes: on one device");
    for (int d = 0; d < nd; ++d) {
      if (written_on_ && !(cands_[static_cast<std::size_t>(d)].device == *written_on_)) continue;
      std::vector<int> uniform(nodes_.size(), d);
      const double t = total(uniform);
      log += " | all on " + cands_[static_cast<std::size_t>(d)].device.str() + ": " +
             (std::isinf(t) ? std::string("cannot run every op") : format_seconds(t));
      if (t < best_s) {
        best_s = t;
        best = uniform;
      }
    }
    if (writes_) {
      if (!best.empty()) log += " | chosen: " + format_seconds(best_s);
      return best;  // one device, or none that runs every op (the caller's error)
    }
    if (best.empty()) {  // no device runs every op: each op where it is cheapest, then improve
      best.assign(nodes_.size(), 0);
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto& c = nodes_[i].cost;
        if (!c.empty()) best[i] = static_cast<int>(std::min_element(c.begin(), c.end()) - c.begin());
      }
      best_s = total(best);
      if (std::isinf(best_s)) return {};
    }
    // Move single entries while that lowers the whole batch's predicted time.
    for (int pass = 0; pass < 8; ++pass) {
      bool improved = false;
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].kind == Node::read) continue;
        for (int d = 0; d < nd; ++d) {
          const int was = best[i];
          if (d == was || std::isinf(nodes_[i].cost[static_cast<std::size_t>(d)])) continue;
          best[i] = d;
          const double t = total(best);
          if (t < best_s * (1 - 1e-9)) {
            best_s = t;
            improved = true;
          } else {
            best[i] = was;
          }
        }
      }
      if (!improved) break;
    }
    // Then runs of consecutive entries moved together: steps that each gain less than the two
    // moves around them may gain more as a run (a chain whose middle is faster elsewhere).
    if (nodes_.size() <= k_run_batch_max) {
      for (int pass = 0; pass < 4; ++pass) {
        bool improved = false;
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].kind == Node::read) continue;
          for (int d = 0; d < nd; ++d) {
            std::vector<int> trial = best;
            std::size_t ops = 0;
            for (std::size_t j = i; j < nodes_.size() && ops < k_run_max; ++j) {
              if (nodes_[j].kind == Node::read) continue;  // a read follows its source
              if (std::isinf(nodes_[j].cost[static_cast<std::size_t>(d)])) break;
              trial[j] = d;
              if (++ops < 2) continue;  // single entries were tried above
              const double t = total(trial);
              if (t < best_s * (1 - 1e-9)) {
                best_s = t;
                best = trial;
                improved = true;
              }
            }
          }
        }
        if (!improved) break;
      }
    }
    log += " | chosen: " + format_seconds(best_s);
    return best;
  }

  // Predicted seconds of the batch with node i on candidate `at[i]`.
  double total(const std::vector<int>& at) const {
    double t = 0;
    std::set<std::pair<const Storage*, int>> moved;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      const int d = device_of(at, i);
      if (n.kind != Node::read) t += n.cost[static_cast<std::size_t>(d)];
      if (std::isinf(t)) return t;
      const Device here = n.kind == Node::read ? Device::cpu() : cands_[static_cast<std::size_t>(d)].device;
      const int target = n.kind == Node::read ? -1 : d;
      for (const auto& in : n.inputs) {
        const Device from =
            in.producer >= 0
                ? cands_[static_cast<std::size_t>(device_of(at, static_cast<std::size_t>(in.producer)))].device
                : in.eager_device;
        if (from == here || !moved.insert({in.storage, target}).second) continue;
        t += dispatch::predict_transfer(profile_, from, here, in.bytes);
      }
    }
    return t;
  }

  int device_of(const std::vector<int>& at, std::size_t i) const {
    return nodes_[i].kind == Node::read ? at[static_cast<std::size_t>(nodes_[i].inputs[0].producer)] : at[i];
  }

 private:
  // The device an op's pinned eager input fixes it to (pin_ says whether there is one).
  Device pinned_input(const OpCall& call) {
    pin_ = false;
    Device d;
    for (const auto& t : call.inputs) {
      if (!t.defined() || !t.pinned() || !t.storage()->handle()) continue;
      if (pin_ && !(d == t.device())) {
        throw Error(ErrorCode::invalid_argument, std::string("[") + op_info(call.op).name +
                                                     "] in a batch uses tensors pinned to " + d.str() + " and to " +
                                                     t.device().str());
      }
      pin_ = true;
      d = t.device();
    }
    return d;
  }

  std::vector<Candidate> cands_;
  const dispatch::Profile& profile_;
  std::vector<Node> nodes_;
  bool pin_ = false;
  bool writes_ = false;                // the batch writes into a tensor (trine::copy_into)
  std::optional<Device> written_on_;  // the device of the tensors made outside it that it writes
};

// Builds the segments for the device chosen for each entry, adding the transfers between devices.
class Cutter {
 public:
  explicit Cutter(BatchRecord& b) : b_(b) {}

  void cut(const std::vector<Device>& device_of_entry) {
    for (std::size_t i = 0; i < b_.entries.size(); ++i) {
      const Device d = device_of_entry[i];
      Entry e = b_.entries[i];
      if (auto* call = std::get_if<OpCall>(&e)) {
        for (auto& t : call->inputs) {
          if (!t.defined() || t.device() == d) continue;
          if (where_.count(t.storage().get())) {
            t = Tensor(copy_on(t.storage(), d), t.shape(), t.strides(), t.offset(), t.dtype(), t.pinned());
          } else {
            t = moved(t, d);
          }
        }
        const Storage* written = call->output.storage().get();
        push(segment(d), std::move(e), i);
        where_[written] = b_.segments.size() - 1;
      } else if (auto* up = std::get_if<Upload>(&e)) {
        auto& seg = segment(d);
        for (auto& in : b_.inputs) {
          if (in.entry == i) {
            in.segment = b_.segments.size() - 1;
            in.at = seg.entries.size();
          }
        }
        where_[up->dst.get()] = b_.segments.size() - 1;
        push(seg, std::move(e), i);
      } else {
        push(segment(d), std::move(e), i);
      }
    }
  }

 private:
  BatchRecord::Segment& segment(Device d) {
    if (b_.segments.empty() || !(b_.segments.back().device == d)) {
      b_.segments.push_back({d, &backend_for(d, "batch"), {}, {}});
    }
    return b_.segments.back();
  }

  static void push(BatchRecord::Segment& seg, Entry e, std::size_t position) {
    seg.entries.push_back(std::move(e));
    seg.positions.push_back(position);
  }

  static unsigned char* host_memory(const std::shared_ptr<Storage>& s) {
    return static_cast<unsigned char*>(s->backend().host_pointer(s->handle()));
  }

  // An eager tensor (a weight made outside the batch) on `d`: moved once, now, and reused by every
  // op of the batch that reads the same view there.
  Tensor moved(const Tensor& t, Device d) {
    for (const auto& [from, to] : eager_) {
      if (from.shares_storage(t) && from.offset() == t.offset() && from.shape() == t.shape() &&
          from.strides() == t.strides() && from.dtype() == t.dtype() && to.device() == d)
        return to;
    }
    Tensor out = move_tensor(t, d, false, "batch");
    eager_.emplace_back(t, out);
    return out;
  }

  // The copy of recorded storage `s` on `d` (the whole storage, so any view of it reads the same
  // offsets), refreshed by each run: an Upload before its first reader on `d` (from the host), or
  // a Readback at the end of its producer's segment (to the host); device to device goes through a
  // host copy.
  std::shared_ptr<Storage> copy_on(const std::shared_ptr<Storage>& s, Device d) {
    constexpr std::size_t added = k_not_recorded;
    const auto key = std::make_pair(s.get(), d.str());
    if (auto it = copies_.find(key); it != copies_.end()) return it->second;
    std::shared_ptr<Storage> out = fresh(d, s->bytes());
    if (s->device().kind != DeviceKind::cpu && d.kind != DeviceKind::cpu) {
      auto host = copy_on(s, Device::cpu());
      push(segment(d), Upload{out, 0, host_memory(host), s->bytes(), host}, added);
    } else if (s->device().kind == DeviceKind::cpu) {
      push(segment(d), Upload{out, 0, host_memory(s), s->bytes(), s}, added);
    } else {
      push(b_.segments[where_.at(s.get())], Readback{s, 0, host_memory(out), s->bytes(), out}, added);
    }
    copies_[key] = out;
    return out;
  }

  static std::shared_ptr<Storage> fresh(Device d, std::size_t bytes) {
    Backend& be = backend_for(d, "batch");
    return std::make_shared<Storage>(&be, d, cached_allocate(be, d, bytes), bytes);
  }

  BatchRecord& b_;
  std::map<const Storage*, std::size_t> where_;  // recorded storage -> the segment writing it
  std::map<std::pair<const Storage*, std::string>, std::shared_ptr<Storage>> copies_;
  std::vector<std::pair<Tensor, Tensor>> eager_;
};

std::vector<Candidate> candidates() {
  std::vector<Candidate> out;
  for (const auto& slot : backend_slots()) {
    if (!slot.backend) continue;
    for (const auto& info : slot.devices)
      if (dispatch::software_allowed(info.device)) out.push_back({info.device, slot.backend});
  }
  return out;
}

// Memory reuse inside each submission of a batch: a recorded tensor that no handle outside the
// batch holds gives its memory, once its last entry has run, to a tensor produced later in the same
// segment (`segment_of` each entry; a batch on one device is one segment). For each storage, the
// index of the storage whose allocation it uses (itself: a fresh one). A chain of 64 ops on 1M
// floats then needs two blocks of 4 MiB, not 64. Only a tensor every entry of one segment touches
// gives its memory: one read on another device is read back at the end of its segment, and one read
// again by a later segment of the same device must keep its contents; and it gives it only within
// that segment, whose submission orders the reader before the next writer.
std::vector<std::size_t> plan_memory(const BatchRecord& b, const std::vector<std::size_t>& segment_of) {
  const std::size_t n = b.storages.size();
  std::map<const Storage*, std::size_t> index;
  for (std::size_t k = 0; k < n; ++k) index[b.storages[k].get()] = k;
  std::vector<std::size_t> produced(n, 0), last(n, 0);
  std::vector<bool> written(n, false);
  std::vector<long> refs(n, 1);  // b.storages holds one
  std::vector<std::vector<std::size_t>> touched_in(n);  // the segments of the entries touching it
  auto use = [&](const std::shared_ptr<Storage>& s, std::size_t i, bool write) {
    auto it = index.find(s.get());
    if (it == index.end()) return;
    ++refs[it->second];
    // the first write makes it; a later one (trine::copy_into into a view of it) is one more use
    if (write && !written[it->second]) {
      produced[it->second] = i;
      written[it->second] = true;
    }
    last[it->second] = std::max(last[it->second], i);
    touched_in[it->second].push_back(segment_of[i]);
  };
  for (std::size_t i = 0; i < b.entries.size(); ++i) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, OpCall>) {
            for (const auto& t : x.inputs)
              if (t.defined()) use(t.storage(), i, false);
            use(x.output.storage(), i, true);
          } else if constexpr (std::is_same_v<T, Upload>) {
            use(x.dst, i, true);
          } else if constexpr (std::is_same_v<T, Readback>) {
            use(x.src, i, false);
          }
        },
        b.entries[i]);
  }
  std::vector<std::size_t> root(n);
  for (std::size_t k = 0; k < n; ++k) root[k] = k;
  // Storages in production order; the free blocks (their root's allocation) by capacity.
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) { return produced[a] < produced[c]; });
  std::vector<bool> local(n);
  for (std::size_t k = 0; k < n; ++k) {
    const auto& t = touched_in[k];
    local[k] = std::all_of(t.begin(), t.end(), [&](std::size_t g) { return g == segment_of[produced[k]]; });
  }
  std::multimap<std::size_t, std::size_t> free;  // capacity -> root, in the current segment
  std::vector<bool> released(n, false);
  std::size_t segment = 0;
  for (std::size_t k : order) {
    if (segment_of[produced[k]] != segment) {  // memory is handed on within a segment only
      free.clear();
      segment = segment_of[produced[k]];
    }
    for (std::size_t j : order) {  // everything whose last use is over, and that nobody else holds
      if (released[j] || produced[j] >= produced[k] || last[j] >= produced[k]) continue;
      if (!local[j] || segment_of[produced[j]] != segment) continue;
      if (b.storages[j].use_count() != refs[j]) continue;
      released[j] = true;
      free.emplace(b.storages[root[j]]->bytes(), root[j]);
    }
    auto it = free.lower_bound(b.storages[k]->bytes());
    if (it != free.end() && b.storages[k]->bytes() > 0) {
      root[k] = it->second;
      free.erase(it);
    }
  }
  return root;
}

}  // namespace

std::string entry_label(std::size_t i) { return "batch entry " + std::to_string(i + 1); }

void place_batch(BatchRecord& b) {
  // The device of every entry.
  std::vector<Device> device_of(b.entries.size(), b.device);
  if (!b.pinned) {
    auto cands = candidates();
    // The destination of a write made outside the batch fixes its device, as a pinned tensor fixes
    // an op's: it is a candidate even where automatic placement would not go on its own (a software
    // device such as lavapipe or the PTX emulator).
    for (const auto& e : b.entries) {
      const auto* call = std::get_if<OpCall>(&e);
      if (!call || !call->output.storage()->handle()) continue;
      const Device d = call->output.device();
      if (std::none_of(cands.begin(), cands.end(), [&](const Candidate& c) { return c.device == d; }))
        cands.push_back({d, &backend_for(d, "batch")});
    }
    Planner planner(b, cands);
    std::string log;
    const std::vector<int> at = planner.plan(log);
    if (at.empty()) throw Error(ErrorCode::unsupported, "[batch] no placement runs every op of this batch" + log);
    for (std::size_t i = 0; i < at.size(); ++i)
      device_of[i] = cands[static_cast<std::size_t>(planner.device_of(at, i))].device;
    if (log_dispatch()) {
      std::map<std::string, int> count;
      for (const auto& d : device_of) ++count[d.str()];
      std::string where;
      for (const auto& [d, n] : count) where += " " + d + " x" + std::to_string(n);
      std::fprintf(stderr, "trine dispatch: [batch] %zu entries ->%s%s\n", b.entries.size(), where.c_str(),
                   log.c_str());
    }
  }
  // Memory for every recorded storage, on the device of the entry that writes it.
  std::map<const Storage*, Device> storage_device;
  for (std::size_t i = 0; i < b.entries.size(); ++i) {
    if (const auto* up = std::get_if<Upload>(&b.entries[i])) storage_device[up->dst.get()] = device_of[i];
    if (const auto* call = std::get_if<OpCall>(&b.entries[i]))
      storage_device[call->output.storage().get()] = device_of[i];
  }
  // The segment of each entry, as Cutter cuts them: a new one wherever the device changes.
  std::vector<std::size_t> segment_of(device_of.size(), 0);
  for (std::size_t i = 1; i < device_of.size(); ++i)
    segment_of[i] = segment_of[i - 1] + (device_of[i] == device_of[i - 1] ? 0 : 1);
  const std::vector<std::size_t> root = plan_memory(b, segment_of);
  std::size_t done = 0;
  try {
    for (; done < b.storages.size(); ++done) {
      auto& s = *b.storages[done];
      const Device d = storage_device.at(&s);
      Backend& be = backend_for(d, "batch");
      if (root[done] == done) {
        s.place(&be, d, cached_allocate(be, d, s.bytes()));
      } else {
        s.place_in(&be, d, b.storages[root[done]]);  // roots come first: produced earlier
      }
    }
    b.segments.clear();
    Cutter(b).cut(device_of);
  } catch (const Error& e) {
    b.segments.clear();
    for (std::size_t i = done; i-- > 0;) {  // borrowers first, then the memory's owners
      auto& s = *b.storages[i];
      if (root[i] == i) cached_deallocate(s.backend(), s.device(), s.handle(), s.bytes());
      s.place(b.pinned ? b.backend : nullptr, b.device, nullptr);
    }
    throw Error(e.code(), std::string("[batch] placing its tensors: ") + e.what());
  }
  b.device = b.segments.empty() ? b.device : b.segments.front().device;
  b.backend = &backend_for(b.device, "batch");
  for (auto& s : b.storages) s->set_recording(nullptr);  // the recording is closed
  b.storages.clear();
  b.placed = true;
}

}  // namespace trine::detail
