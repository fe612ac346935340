// copy, cast, gather and concat on Vulkan. copy: a contiguous one is a buffer copy; a strided f32
// one goes through binary.comp (as its a-alone operation), and casts and strided copies of the other
// dtypes through copy.comp, which converts between f32, f16, bf16 and i32 bit-exactly over any input
// strides (an i32 copy moves its words as f32 bits: no conversion touches them). gather:
// copy_gather.comp, which reports an index outside the table through Recorder::report_words.
// concat: each input into its slab of the output, by buffer copies where it is contiguous in long
// runs, else by copy_concat.comp.
#include <string>
#include <vector>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

struct CastPush {
  std::uint32_t n, rank, x_off;
  std::uint32_t dims[8], str[8];
  std::uint32_t y_off;  // scatter only
};

// y (contiguous) = x converted element by element from dtype code `from` to `to` (dtype_code's),
// x read through its strides (copy.comp).
void record_cast(Recorder& rec, const Tensor& x, const TensorRef& y, std::uint32_t from, std::uint32_t to) {
  const std::uint64_t n = static_cast<std::uint64_t>(x.numel());
  if (n == 0) return;
  CastPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(x.rank());
  const TensorRef rx = ref_of(x);
  p.x_off = rx.offset;
  for (int i = 0; i < x.rank(); ++i) {
    p.dims[i] = static_cast<std::uint32_t>(x.shape()[i]);
    p.str[i] = static_cast<std::uint32_t>(x.strides()[i]);
  }
  constexpr std::uint32_t group = 256;
  rec.dispatch("copy", {bind_in(rx), bind_out(y)}, &p, sizeof(p), ((n + 1) / 2 + group - 1) / group, {group, from, to});
}

// Runs of a view written by buffer-copy regions (trine::copy_into) when each is at least this long
// and there are at most k_scatter_regions of them (a KV cache's row per head); else copy.comp scatters.
constexpr std::uint64_t k_scatter_run_bytes = 64;
constexpr std::uint64_t k_scatter_regions = 4096;

// The view's rows of its last dim as buffer-copy regions, when they are long and few enough.
bool scatter_regions(const Tensor& x, const Tensor& y, std::vector<Recorder::Region>& out) {
  const int rank = y.rank();
  const std::uint64_t inner = static_cast<std::uint64_t>(y.dim(rank - 1)), esz = dtype_size(y.dtype());
  const std::uint64_t rows = static_cast<std::uint64_t>(y.numel()) / inner;
  if (y.strides()[rank - 1] != 1 || inner * esz < k_scatter_run_bytes || rows > k_scatter_regions) return false;
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::int64_t off = y.offset();
    std::uint64_t rest = r;
    for (int d = rank - 2; d >= 0; --d) {
      const auto dim = static_cast<std::uint64_t>(y.dim(d));
      off += static_cast<std::int64_t>(rest % dim) * y.strides()[d];
      rest /= dim;
    }
    out.push_back({static_cast<std::size_t>((static_cast<std::uint64_t>(x.offset()) + r * inner) * esz),
                   static_cast<std::size_t>(off) * esz, static_cast<std::size_t>(inner * esz)});
  }
  return true;
}

// x (contiguous) into the view y through y's strides: copy.comp with SCATTER.
void record_scatter(Recorder& rec, const Tensor& x, const Tensor& y) {
  std::vector<Recorder::Region> regions;
  if (scatter_regions(x, y, regions)) return rec.copy(ref_of(x).alloc, ref_of(y).alloc, regions);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  CastPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(y.rank());
  const TensorRef rx = ref_of(x), ry = ref_of(y);
  p.x_off = rx.offset;
  p.y_off = ry.offset;
  for (int i = 0; i < y.rank(); ++i) {
    p.dims[i] = static_cast<std::uint32_t>(y.shape()[i]);
    p.str[i] = static_cast<std::uint32_t>(y.strides()[i]);
  }
  // i32 words move as f32 bits (code 0), untouched
  const std::uint32_t code = y.dtype() == DType::i32 ? dtype_code(DType::f32) : dtype_code(y.dtype());
  constexpr std::uint32_t group = 256;
  rec.dispatch("copy", {bind_in(rx), bind_out(ry)}, &p, sizeof(p), ((n + 1) / 2 + group - 1) / group,
               {group, code, code, 1});
}

struct CopyAtPush {
  std::uint32_t n, rank, x_off, y_off, p_off, pos_stride, pos_max;
  std::uint32_t dims[8], str[8];
};

// A write at a position read on the device (detail::writes_at): copy_at.comp, which reports a bad
// position through Recorder::report_words.
void record_copy_at(Recorder& rec, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  const std::uint64_t n = static_cast<std::uint64_t>(x.numel());
  const std::string what = detail::write_position_error(0, call);  // "position 0 is outside ..."
  const std::string rest = what.substr(what.find(" is outside"));
  Allocation* err = rec.report_words(2, [rest](std::span<const std::uint32_t> w) -> std::optional<Error> {
    if (w[0] == 0xFFFFFFFFu) return std::nullopt;
    return Error(ErrorCode::invalid_argument,
                 "position " + std::to_string(static_cast<std::int32_t>(w[1])) + rest);
  });
  const Tensor view = detail::written_at(call, 0);
  CopyAtPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(view.rank());
  const TensorRef rx = ref_of(x), ry = ref_of(y), rp = ref_of(call.inputs[1]);
  p.x_off = rx.offset;
  p.y_off = ry.offset;
  p.p_off = rp.offset;
  p.pos_stride = static_cast<std::uint32_t>(y.strides()[static_cast<std::size_t>(detail::write_axis(call))]);
  p.pos_max = static_cast<std::uint32_t>(detail::write_position_max(call));
  for (int i = 0; i < view.rank(); ++i) {
    p.dims[i] = static_cast<std::uint32_t>(view.shape()[i]);
    p.str[i] = static_cast<std::uint32_t>(view.strides()[i]);
  }
  constexpr std::uint32_t group = 256;
  // one workgroup at least: invocation 0 reports a bad position even when nothing is written
  rec.dispatch("copy_at", {bind_in(rx), bind_out(ry), bind_in(rp), Binding{err, true}}, &p, sizeof(p),
               std::max<std::uint64_t>(1, (n + group - 1) / group), {group, dtype_size(y.dtype()) == 2 ? 1u : 0u});
}

// Every dtype: both move the data as it is or convert it exactly.
// A view written (trine::copy_into) sits anywhere in its storage: its offsets must fit 32 bits too.
bool supports_copy(const detail::OpCall& call) {
  return inputs_fit_u32(call) && call.output.storage()->bytes() / 4 < (std::uint64_t{1} << 32);
}

void limits_copy(Limits& l, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  if (detail::writes_at(call)) {
    l.temporary(8);  // report_words(2)
    l.bind(x, "the source");
    l.bind(y, "the destination");
    l.bind(call.inputs[1], "the position");
    l.bind(8, "the error report");
    return;
  }
  // nothing, or a buffer copy: no shader binding
  if (y.numel() == 0 || (x.is_contiguous() && y.is_contiguous())) return;
  if (detail::writes_view(call)) {
    std::vector<Recorder::Region> regions;
    if (scatter_regions(x, y, regions)) return;
  }
  l.bind(x, "input 0");
  l.bind(y, "the output");
}

void record_copy(Recorder& rec, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  const TensorRef ry = ref_of(y);
  if (detail::writes_at(call)) return record_copy_at(rec, call);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  if (n == 0) return;
  if (detail::writes_view(call)) return record_scatter(rec, x, y);
  if (x.is_contiguous()) {  // y may be a view at an offset (trine::copy_into of a contiguous one)
    const std::size_t esz = dtype_size(x.dtype());
    return rec.copy(ref_of(x).alloc, static_cast<std::size_t>(x.offset()) * esz, ry.alloc,
                    static_cast<std::size_t>(ry.offset) * esz, n * esz);
  }
  if (x.dtype() == DType::f32) return record_strided(rec, x, x, ry, y.shape(), OpKind::copy, OpKind::copy, 0, 0);
  // 16-bit values round-trip through f32 exactly; i32 words move as f32 bits (code 0), untouched.
  const std::uint32_t code = x.dtype() == DType::i32 ? dtype_code(DType::f32) : dtype_code(x.dtype());
  record_cast(rec, x, ry, code, code);
}

void limits_cast(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "input 0");
  l.bind(call.output, "the output");
}

void record_cast_op(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor& x = call.inputs[0];
  record_cast(rec, x, ref_of(call.output), dtype_code(x.dtype()), dtype_code(std::get<CastParams>(call.params).dtype));
}

// ---- gather ----

constexpr std::uint32_t k_gather_elems = 4;

struct GatherPush {
  std::uint32_t n, d, v, t_off, t_rs, t_cs, i_off, i_str, half;
};

// 32-bit words of y the gather writes, one per invocation (two 16-bit elements each), or one per
// index when there are no columns (the indices are checked all the same).
std::uint64_t gather_words(std::uint64_t n, std::uint64_t d, bool half) {
  if (d == 0) return n;
  return half ? (n * d + 1) / 2 : n * d;
}

void limits_gather(Limits& l, const detail::OpCall& call) {
  if (call.inputs[1].numel() == 0) return;  // no indices: nothing recorded
  l.temporary(8);                           // report_words(2)
  l.bind(call.inputs[0], "the table");
  l.bind(call.inputs[1], "the indices");
  l.bind(call.output, "the output");
  l.bind(8, "the error report");
}

void record_gather(Recorder& rec, const detail::OpCall& call) {
  const Tensor &table = call.inputs[0], &idx = call.inputs[1], &y = call.output;
  if (idx.numel() == 0) return;
  const std::int64_t rows = table.shape()[0];
  // err[0]: the lowest position whose index is outside the table, err[1]: that index
  // (copy_gather.comp); read when the work completes, and the call's error if any.
  Allocation* err = rec.report_words(2, [rows](std::span<const std::uint32_t> w) -> std::optional<Error> {
    if (w[0] == 0xFFFFFFFFu) return std::nullopt;
    return Error(ErrorCode::invalid_argument, "index " + std::to_string(static_cast<std::int32_t>(w[1])) +
                                                  " at position " + std::to_string(w[0]) +
                                                  " is outside the table's rows [0, " + std::to_string(rows) + ")");
  });
  const bool half = dtype_size(table.dtype()) == 2;
  const TensorRef rt = ref_of(table), ri = ref_of(idx), ry = ref_of(y);
  GatherPush p{static_cast<std::uint32_t>(idx.numel()),
               static_cast<std::uint32_t>(table.shape()[1]),
               static_cast<std::uint32_t>(rows),
               rt.offset,
               static_cast<std::uint32_t>(table.strides()[0]),
               static_cast<std::uint32_t>(table.strides()[1]),
               ri.offset,
               static_cast<std::uint32_t>(idx.strides()[0]),
               half};
  const std::uint64_t words = gather_words(p.n, p.d, half);
  const Binding be{err, true};
  rec.dispatch("copy_gather", {bind_in(rt), bind_in(ri), bind_out(ry), be}, &p, sizeof(p),
               elementwise_groups(words, k_gather_elems), {k_elementwise_group, k_gather_elems, 0});
  // One invocation: the first bad position's index into err[1] (one bad row is any of its many
  // invocations, so the gather itself cannot tell which index to keep). y's binding gets err too:
  // the synchronization validation counts a binding the shader can write as written, and the
  // recorder orders y's readers after the gather only.
  rec.dispatch("copy_gather", {bind_in(rt), bind_in(ri), be, be}, &p, sizeof(p), 1, {1, 1, 1});
}

// ---- concat ----

constexpr std::uint32_t k_concat_elems = 4;
// A contiguous input whose rows of the slab are at least this long is copied by the transfer
// commands (one region per row), which move memory faster than a shader does on lavapipe.
constexpr std::uint64_t k_concat_copy_bytes = 256;

struct ConcatPush {
  std::uint32_t n, rank, x_off, half, slab, row, at, pad;
  std::uint32_t dims[8], str[8];
};

// The output viewed as [outer, row] around the axis: input k's rows of `slab` elements each go to
// the columns from `at` (the slabs before it) of each row.
struct ConcatSplit {
  std::uint64_t outer = 1, inner = 1, row = 0;
};
ConcatSplit concat_split(const detail::OpCall& call) {
  const Tensor& y = call.output;
  const int axis = std::get<AxisParams>(call.params).axis, a = axis < 0 ? axis + y.rank() : axis;
  ConcatSplit s;
  for (int i = 0; i < a; ++i) s.outer *= static_cast<std::uint64_t>(y.shape()[i]);
  for (int i = a + 1; i < y.rank(); ++i) s.inner *= static_cast<std::uint64_t>(y.shape()[i]);
  s.row = static_cast<std::uint64_t>(y.shape()[a]) * s.inner;
  return s;
}

std::uint64_t axis_len(const detail::OpCall& call, const Tensor& x) {
  const int a = std::get<AxisParams>(call.params).axis;
  return static_cast<std::uint64_t>(x.shape()[a < 0 ? a + x.rank() : a]);
}

bool concat_by_copies(const Tensor& x, std::uint64_t slab) {
  return x.is_contiguous() && slab * dtype_size(x.dtype()) >= k_concat_copy_bytes;
}

void limits_concat(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const ConcatSplit s = concat_split(call);
  for (const Tensor& x : call.inputs) {
    const std::uint64_t slab = axis_len(call, x) * s.inner;
    if (x.numel() == 0 || concat_by_copies(x, slab)) continue;
    l.bind(x, "an input");
    l.bind(call.output, "the output");
  }
}

void record_concat(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  const ConcatSplit s = concat_split(call);
  const TensorRef ry = ref_of(y);
  const std::size_t esz = dtype_size(y.dtype());
  std::uint64_t at = 0;
  for (const Tensor& x : call.inputs) {
    std::uint64_t slab = axis_len(call, x) * s.inner, outer = s.outer;
    const std::uint64_t first = at;
    at += slab;
    if (x.numel() == 0) continue;
    if (concat_by_copies(x, slab)) {
      const TensorRef rx = ref_of(x);
      std::vector<Recorder::Region> regions;
      for (std::uint64_t o = 0; o < outer; ++o)
        regions.push_back({(rx.offset + o * slab) * esz, (o * s.row + first) * esz, slab * esz});
      rec.copy(rx.alloc, ry.alloc, regions);
      continue;
    }
    // An input that fills every row of the output (the others are empty) is one run: its rows are
    // next to each other, and copy_concat.comp's 16-bit words must not straddle two of its rows.
    if (slab == s.row) slab *= outer, outer = 1;
    ConcatPush p{};
    p.n = static_cast<std::uint32_t>(x.numel());
    p.rank = static_cast<std::uint32_t>(x.rank());
    const TensorRef rx = ref_of(x);
    p.x_off = rx.offset;
    p.half = esz == 2;
    p.slab = static_cast<std::uint32_t>(slab);
    p.row = static_cast<std::uint32_t>(s.row);
    p.at = static_cast<std::uint32_t>(first);
    for (int i = 0; i < x.rank(); ++i) {
      p.dims[i] = static_cast<std::uint32_t>(x.shape()[i]);
      p.str[i] = static_cast<std::uint32_t>(x.strides()[i]);
    }
    const std::uint64_t items = p.half ? outer * (slab / 2 + 1) : outer * slab;
    rec.dispatch("copy_concat", {bind_in(rx), bind_out(ry)}, &p, sizeof(p), elementwise_groups(items, k_concat_elems),
                 {k_elementwise_group, k_concat_elems});
  }
}

}  // namespace

void register_copy(VulkanOps& r) {
  r.add(OpKind::copy, {supports_copy, limits_copy, record_copy});
  r.add(OpKind::cast, {supports_copy, limits_cast, record_cast_op});
  // gather and concat take every dtype: they move elements as they are
  r.add(OpKind::gather, {supports_copy, limits_gather, record_gather});
  r.add(OpKind::concat, {supports_copy, limits_concat, record_concat});
}

}  // namespace trine::vulkan
