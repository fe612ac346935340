// The cost model's numbers: built-in defaults, the calibration profile on disk (JSON), predictions.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/backend.hpp"
#include "backends/cache_dir.hpp"
#include "dispatch/dispatcher.hpp"
#include "trine/error.hpp"
#include "trine/version.hpp"

namespace trine::dispatch {
namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

// The documented defaults (docs/dispatch.md), by kind and whether the device is software. Rough on
// purpose: they only have to order devices sensibly until `trine-bench --calibrate` has run. The cpu,
// lavapipe and emulator figures are what trine-bench measured on a 2-core AVX-512 VM; the GPU
// figures are a mid-range GPU's order of magnitude, never measured here.
DeviceModel default_model(const DeviceInfo& info) {
  DeviceModel m;
  m.device = info.device.str();
  m.name = info.name;
  m.driver = info.driver;
  m.software = info.software;
  switch (info.device.kind) {
    case DeviceKind::cpu:
      m.op_fixed_s = 1e-6, m.bytes_per_s = 30e9, m.flops_per_s = 150e9;
      break;  // host memory: transfers cost nothing
    case DeviceKind::vulkan:
      if (info.software) {  // lavapipe: host-visible memory, shaders run on the CPU
        m.op_fixed_s = 80e-6, m.bytes_per_s = 3e9, m.flops_per_s = 2e9;
        m.upload_fixed_s = m.readback_fixed_s = 20e-6;
        m.upload_bytes_per_s = m.readback_bytes_per_s = 8e9;
      } else {
        m.op_fixed_s = 20e-6, m.bytes_per_s = 200e9, m.flops_per_s = 2e12;
        m.upload_fixed_s = m.readback_fixed_s = 20e-6;
        m.upload_bytes_per_s = m.readback_bytes_per_s = 10e9;
      }
      break;
    case DeviceKind::cuda:
      if (info.software) {  // the PTX emulator
        m.op_fixed_s = 20e-6, m.bytes_per_s = 150e6, m.flops_per_s = 200e6;
        m.upload_fixed_s = m.readback_fixed_s = 5e-6;
        m.upload_bytes_per_s = m.readback_bytes_per_s = 5e9;
      } else {
        m.op_fixed_s = 10e-6, m.bytes_per_s = 1e12, m.flops_per_s = 20e12;
        m.upload_fixed_s = m.readback_fixed_s = 10e-6;
        m.upload_bytes_per_s = m.readback_bytes_per_s = 12e9;
      }
      break;
  }
  return m;
}

std::vector<DeviceInfo> machine_devices() {
  std::vector<DeviceInfo> out;
  for (const auto& s : detail::backend_slots()) out.insert(out.end(), s.devices.begin(), s.devices.end());
  return out;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A rate or time read from JSON: finite and >= 0, else the profile is corrupt.
double number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  const auto& v = j.at(key);
  if (!v.is_number()) throw Error(ErrorCode::invalid_argument, where + "." + key + " is not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) throw Error(ErrorCode::invalid_argument, where + "." + key + " is not a finite number >= 0");
  return d;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_string()) {
    throw Error(ErrorCode::invalid_argument, where + "." + key + " is missing or not a string");
  }
  return j.at(key).get<std::string>();
}

double term(double amount, double rate) { return rate > 0 ? amount / rate : 0.0; }

struct Active {
  std::mutex mu;
  std::shared_ptr<const Profile> profile;
  // Profiles are replaced, never changed in place; replaced ones stay alive for the process, so a
  // reference active_profile() handed out never dangles.
  std::vector<std::shared_ptr<const Profile>> retired;
};
Active& active() {
  static Active a;
  return a;
}

// The loaded profile with the built-in model added for each device of this machine it lacks.
Profile complete(Profile p) {
  for (const auto& info : machine_devices()) {
    if (!p.find(info.device)) p.devices.push_back(default_model(info));
  }
  return p;
}

}  // namespace

const DeviceModel* Profile::find(Device d) const {
  const std::string key = d.str();
  for (const auto& m : devices)
    if (m.device == key) return &m;
  return nullptr;
}

Profile builtin_profile() {
  Profile p;
  p.trine_version = version();
  p.created = utc_now();
  p.source = "built-in defaults";
  for (const auto& info : machine_devices()) p.devices.push_back(default_model(info));
  return p;
}

std::filesystem::path profile_path() {
  const std::filesystem::path dir = detail::cache_dir();
  return dir.empty() ? dir : dir / "profile.json";
}

std::string to_json(const Profile& p) {
  nlohmann::json j;
  j["format"] = p.format;
  j["trine_version"] = p.trine_version;
  j["created"] = p.created;
  j["devices"] = nlohmann::json::array();
  for (const auto& m : p.devices) {
    nlohmann::json d;
    d["device"] = m.device;
    d["name"] = m.name;
    d["driver"] = m.driver;
    d["software"] = m.software;
    d["op_fixed_s"] = m.op_fixed_s;
    d["bytes_per_s"] = m.bytes_per_s;
    d["flops_per_s"] = m.flops_per_s;
    d["upload_fixed_s"] = m.upload_fixed_s;
    d["upload_bytes_per_s"] = m.upload_bytes_per_s;
    d["readback_fixed_s"] = m.readback_fixed_s;
    d["readback_bytes_per_s"] = m.readback_bytes_per_s;
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [name, classes] : m.ops) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& c : classes) {
        nlohmann::json cj;
        cj["upto"] = std::isinf(c.upto) ? nlohmann::json("inf") : nlohmann::json(c.upto);
        cj["fixed_s"] = c.fixed_s;
        cj["bytes_per_s"] = c.bytes_per_s;
        cj["flops_per_s"] = c.flops_per_s;
        if (c.at > 0) cj["at"] = c.at;
        list.push_back(cj);
      }
      ops[name] = list;
    }
    d["ops"] = ops;
    j["devices"].push_back(d);
  }
  return j.dump(1);
}

Profile profile_from_json(const std::string& content) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(content);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw Error(ErrorCode::invalid_argument, "not a JSON object");
  Profile p;
  if (!j.contains("format") || !j.at("format").is_number_integer()) {
    throw Error(ErrorCode::invalid_argument, "no integer 'format': not a trine profile");
  }
  p.format = j.at("format").get<int>();
  if (p.format != Profile::k_format) {
    throw Error(ErrorCode::invalid_argument, "format " + std::to_string(p.format) + ", this trine reads format " +
                                                 std::to_string(Profile::k_format));
  }
  p.trine_version = text(j, "trine_version", "profile");
  p.created = text(j, "created", "profile");
  if (!j.contains("devices") || !j.at("devices").is_array() || j.at("devices").empty()) {
    throw Error(ErrorCode::invalid_argument, "no devices");
  }
  for (const auto& d : j.at("devices")) {
    if (!d.is_object()) throw Error(ErrorCode::invalid_argument, "a device entry is not an object");
    DeviceModel m;
    m.device = text(d, "device", "device");
    const std::string where = "device " + m.device;
    Device::parse(m.device);  // throws on nonsense
    m.name = text(d, "name", where);
    m.driver = text(d, "driver", where);
    if (d.contains("software") && !d.at("software").is_boolean()) {
      throw Error(ErrorCode::invalid_argument, where + ".software is not a boolean");
    }
    m.software = d.value("software", false);
    m.op_fixed_s = number(d, "op_fixed_s", where);
    m.bytes_per_s = number(d, "bytes_per_s", where);
    m.flops_per_s = number(d, "flops_per_s", where);
    m.upload_fixed_s = number(d, "upload_fixed_s", where);
    m.upload_bytes_per_s = number(d, "upload_bytes_per_s", where);
    m.readback_fixed_s = number(d, "readback_fixed_s", where);
    m.readback_bytes_per_s = number(d, "readback_bytes_per_s", where);
    if (m.bytes_per_s <= 0 && m.flops_per_s <= 0) throw Error(ErrorCode::invalid_argument, where + " has no rates");
    if (d.contains("ops")) {
      if (!d.at("ops").is_object()) throw Error(ErrorCode::invalid_argument, where + ".ops is not an object");
      for (const auto& [name, list] : d.at("ops").items()) {
        bool known = false;
        for (std::size_t k = 0; k < TRINE_OP_COUNT; ++k) known = known || name == op_info(static_cast<OpKind>(k)).name;
        if (!known) throw Error(ErrorCode::invalid_argument, where + " names an unknown op '" + name + "'");
        if (!list.is_array() || list.empty()) {
          throw Error(ErrorCode::invalid_argument, where + ".ops." + name + " is not a non-empty list");
        }
        std::vector<SizeClass> classes;
        for (const auto& c : list) {
          const std::string cw = where + ".ops." + name;
          if (!c.is_object()) throw Error(ErrorCode::invalid_argument, cw + " has a class that is not an object");
          SizeClass sc;
          if (c.contains("upto") && c.at("upto").is_string() && c.at("upto").get<std::string>() == "inf") {
            sc.upto = k_inf;
          } else {
            sc.upto = number(c, "upto", cw);
          }
          sc.fixed_s = number(c, "fixed_s", cw);
          sc.bytes_per_s = number(c, "bytes_per_s", cw);
          sc.flops_per_s = number(c, "flops_per_s", cw);
          sc.at = number(c, "at", cw);
          if (!classes.empty() && !(sc.upto > classes.back().upto)) {
            throw Error(ErrorCode::invalid_argument, cw + ": size classes not in increasing order");
          }
          classes.push_back(sc);
        }
        m.ops[name] = std::move(classes);
      }
    }
    p.devices.push_back(std::move(m));
  }
  return p;
}

std::optional<Profile> load_profile(const std::filesystem::path& path, std::string& warning) {
  warning.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    warning = "no profile at " + path.string();
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  Profile p;
  try {
    p = profile_from_json(ss.str());
  } catch (const std::exception& e) {
    warning = "ignoring the calibration profile " + path.string() + ": " + e.what() +
              " (run trine-bench --calibrate to write a new one)";
    return std::nullopt;
  }
  // Every device it describes must be one of this machine's, under the same driver.
  const auto here = machine_devices();
  for (const auto& m : p.devices) {
    const DeviceInfo* match = nullptr;
    for (const auto& info : here)
      if (info.device.str() == m.device) match = &info;
    if (!match || match->name != m.name) {
      warning = "ignoring the calibration profile " + path.string() + ": it was made for another machine (" +
                m.device + " is '" + m.name + "' there, " +
                (match ? "'" + match->name + "'" : std::string("absent")) +
                " here; run trine-bench --calibrate)";
      return std::nullopt;
    }
    if (match->driver != m.driver) {
      warning = "ignoring the calibration profile " + path.string() + ": stale (" + m.device + " ran driver '" +
                m.driver + "', now '" + match->driver + "'; run trine-bench --calibrate)";
      return std::nullopt;
    }
  }
  p.source = path.string();
  return p;
}

void save_profile(const Profile& p, const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::invalid_argument, "[profile] cannot write " + tmp.string());
    out << to_json(p) << "\n";
    if (!out) throw Error(ErrorCode::invalid_argument, "[profile] writing " + tmp.string() + " failed");
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: a reader never sees half a profile
  if (ec) throw Error(ErrorCode::invalid_argument, "[profile] cannot move " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

const Profile& active_profile() {
  auto& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  if (!a.profile) {
    Profile p = builtin_profile();
    const auto path = profile_path();
    if (!path.empty() && std::filesystem::exists(path)) {
      std::string warning;
      if (auto loaded = load_profile(path, warning)) {
        p = complete(std::move(*loaded));
      } else {
        std::fprintf(stderr, "trine: %s\n", warning.c_str());
      }
    }
    a.profile = std::make_shared<const Profile>(std::move(p));
  }
  return *a.profile;
}

void set_profile(Profile p) {
  auto& a = active();
  auto fresh = std::make_shared<const Profile>(complete(std::move(p)));
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.profile) a.retired.push_back(a.profile);
  a.profile = std::move(fresh);
}

void reset_profile() {
  auto& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.profile) a.retired.push_back(a.profile);
  a.profile.reset();
}

namespace {
const DeviceModel& model_for(const Profile& p, Device device, DeviceModel& scratch) {
  if (const auto* m = p.find(device)) return *m;
  for (const auto& info : machine_devices()) {
    if (info.device == device) {
      scratch = default_model(info);
      return scratch;
    }
  }
  scratch = default_model(DeviceInfo{device, device.str(), "", false, ""});
  return scratch;
}
}  // namespace

namespace {
double class_time(const SizeClass& c, const OpCost& cost) {
  return c.fixed_s + term(cost.bytes, c.bytes_per_s) + term(cost.flops, c.flops_per_s);
}
}  // namespace

double predict_compute(const Profile& p, Device device, OpKind op, const OpCost& cost) {
  DeviceModel scratch;
  const DeviceModel& m = model_for(p, device, scratch);
  auto it = m.ops.find(op_info(op).name);
  if (it == m.ops.end() || it->second.empty()) {
    return m.op_fixed_s + term(cost.bytes, m.bytes_per_s) + term(cost.flops, m.flops_per_s);
  }
  const auto& classes = it->second;
  const double size = cost.flops + cost.bytes;
  std::size_t k = classes.size() - 1;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (size <= classes[i].upto) {
      k = i;
      break;
    }
  }
  const double here = class_time(classes[k], cost);
  // Between two measured sizes: blend toward the neighbour on the query's side.
  const SizeClass& c = classes[k];
  if (c.at <= 0 || size <= 0) return here;
  const std::size_t j = size < c.at ? (k > 0 ? k - 1 : k) : (k + 1 < classes.size() ? k + 1 : k);
  const SizeClass& n = classes[j];
  if (j == k || n.at <= 0 || n.at == c.at) return here;
  const double w = std::clamp(std::log(size / c.at) / std::log(n.at / c.at), 0.0, 1.0);
  const double there = class_time(n, cost);
  if (here <= 0 || there <= 0) return here;
  return std::exp((1 - w) * std::log(here) + w * std::log(there));
}

double predict_transfer(const Profile& p, Device from, Device to, double bytes) {
  if (from == to) return 0;
  double t = 0;
  DeviceModel scratch;
  if (from.kind != DeviceKind::cpu) {
    const auto& m = model_for(p, from, scratch);
    t += m.readback_fixed_s + term(bytes, m.readback_bytes_per_s);
  }
  if (to.kind != DeviceKind::cpu) {
    const auto& m = model_for(p, to, scratch);
    t += m.upload_fixed_s + term(bytes, m.upload_bytes_per_s);
  }
  return t;
}

}  // namespace trine::dispatch
