// benches/compare: trine's cpu backend side by side with OpenBLAS, Eigen 3.4 and oneDNN 2.6 in one
// process, for the thread count in TRINE_NUM_THREADS (scripts/compare.sh runs 1 and 2 and picks
// OpenBLAS's fastest kernel first). Prints one markdown table; ratios are their time / trine's
// time (> 1: trine faster), medians of per-round ratios with the range in brackets.
//
//   compare [--quick] [--filter TEXT] [--rounds N]
//   compare --probe-openblas      (sgemm n=1024 GFLOP/s of the kernel OPENBLAS_CORETYPE selects)
#include <cblas.h>
#include <omp.h>

#include <Eigen/Core>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include <unistd.h>

#include "harness.hpp"
#include "machine.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

namespace {

using namespace compare;
using trine::Tensor;
using EMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Host data the libraries share: trine's tensor and an aligned copy of its values.
struct Input {
  Tensor t;
  Buffer host;
  std::size_t n = 0;
};

Input input(const trine::Shape& shape, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Input in;
  in.t = Tensor::random(shape, seed, lo, hi);
  const std::vector<float> v = in.t.to_vector();
  in.n = v.size();
  in.host = aligned_floats(v.size());
  std::copy(v.begin(), v.end(), in.host.get());
  return in;
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
std::string ratio_text(const Stat& s) { return fmt("%.2f", s.median) + " (" + fmt("%.2f", s.lo) + "-" + fmt("%.2f", s.hi) + ")"; }

void row(const std::string& line, const std::string& trine, const std::string& other, const std::string& ratio) {
  std::printf("| %s | %s | %s | %s |\n", line.c_str(), trine.c_str(), other.c_str(), ratio.c_str());
  std::fflush(stdout);
}

bool wanted(const Options& o, const std::string& line) {
  const bool w = o.filter.empty() || line.find(o.filter) != std::string::npos;
  if (w) progress(o, line);
  return w;
}

void sgemm_lines(const Options& o) {
  const std::vector<long> sizes = o.quick ? std::vector<long>{128, 512} : std::vector<long>{128, 256, 512, 1024, 2048};
  for (long n : sizes) {
    const std::string line = "sgemm n=" + std::to_string(n);
    if (!wanted(o, line)) continue;
    Input a = input({n, n}, 1), b = input({n, n}, 2);
    Buffer c = aligned_floats(static_cast<std::size_t>(n * n)), ce = aligned_floats(static_cast<std::size_t>(n * n));
    Eigen::Map<const EMat> ea(a.host.get(), n, n), eb(b.host.get(), n, n);
    Eigen::Map<EMat> ec(ce.get(), n, n);
    const int ni = static_cast<int>(n);
    auto blas = [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.host.get(), ni, b.host.get(), ni, 0.0f, c.get(), ni); };
    const std::vector<float> mine = trine::matmul(a.t, b.t).to_vector();
    blas();
    ec.noalias() = ea * eb;
    expect_close(line, "OpenBLAS", mine.data(), c.get(), mine.size(), 1e-5);
    expect_close(line, "Eigen", mine.data(), ce.get(), mine.size(), 1e-5);
    std::vector<Contender> cs = {{"trine", [&] { Tensor y = trine::matmul(a.t, b.t); }},
                                 {"OpenBLAS", blas},
                                 {"Eigen", [&] { ec.noalias() = ea * eb; }}};
    // The largest size also times the FMA loop as a fourth contender, so that its fraction of the
    // peak is a median of per-round ratios like every other line: with the peak measured once, a
    // VM whose speed moves by a third between minutes made the line read 0.49-0.67 on runs where
    // trine's GEMM alone, back to back, reached 0.86 of it.
    const bool peak_line = n == sizes.back();
    const long fma_iters = fma_peak_iters(o.quick);
    if (peak_line) cs.push_back({"FMA peak", [&] { fma_peak_run(o.threads, fma_iters); }});
    const Timing t = time_round_robin(o, cs);
    const double flops = 2.0 * n * n * n;
    const double g = flops / t.per_call(0).median / 1e9;
    row(line + " vs OpenBLAS", fmt("%.0f GFLOP/s", g), fmt("%.0f GFLOP/s", flops / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
    row(line + " vs Eigen", fmt("%.0f GFLOP/s", g), fmt("%.0f GFLOP/s", flops / t.per_call(2).median / 1e9), ratio_text(t.ratio(2)));
    if (peak_line) {
      const double peak_flops = fma_peak_flops(fma_iters) * o.threads;
      const double p = peak_flops / t.per_call(3).median / 1e9;
      const Stat r = t.ratio(3);  // per round: peak's time / trine's time, scaled to a fraction
      const double scale = flops / peak_flops;
      row(line + " as a fraction of the FMA peak (both in each round)", fmt("%.0f GFLOP/s", g), fmt("peak %.0f", p),
          ratio_text({r.median * scale, r.lo * scale, r.hi * scale}));
    }
  }
}

// Products with few rows against a wide, deep B: a batch of tokens through a layer's weights (M = 32),
// and a prompt through an MLP's up projection (M = 512, N = 11008), B row-major [K, N].
void skinny_lines(const Options& o) {
  struct Case {
    long m, k, n;
  };
  const std::vector<Case> cases = o.quick ? std::vector<Case>{{32, 1024, 1024}} : std::vector<Case>{{32, 4096, 4096}, {512, 4096, 11008}};
  for (const Case& c : cases) {
    const std::string line = "sgemm M=" + std::to_string(c.m) + " K=" + std::to_string(c.k) + " N=" + std::to_string(c.n);
    if (!wanted(o, line)) continue;
    Input a = input({c.m, c.k}, 13), b = input({c.k, c.n}, 14);
    Buffer out = aligned_floats(static_cast<std::size_t>(c.m * c.n));
    const int m = static_cast<int>(c.m), k = static_cast<int>(c.k), n = static_cast<int>(c.n);
    auto blas = [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.host.get(), k, b.host.get(), n, 0.0f, out.get(), n); };
    const std::vector<float> mine = trine::matmul(a.t, b.t).to_vector();
    blas();
    expect_close(line, "OpenBLAS", mine.data(), out.get(), mine.size(), 1e-5);
    const Timing t = time_round_robin(o, {{"trine", [&] { Tensor y = trine::matmul(a.t, b.t); }}, {"OpenBLAS", blas}});
    const double flops = 2.0 * c.m * c.k * c.n;
    row(line + " vs OpenBLAS", fmt("%.0f GFLOP/s", flops / t.per_call(0).median / 1e9),
        fmt("%.0f GFLOP/s", flops / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
  }
}

struct ConvCase {
  const char* name;
  long n, c, h, w, k, r, s, stride, pad, groups;
};

void conv_lines(const Options& o, dnnl::engine& eng, dnnl::stream& strm) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const ConvCase cases[] = {{"conv2d 3x3 C=K=64 56x56 N=1", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1},
                            {"conv2d 3x3 C=K=64 56x56 N=8", 8, 64, 56, 56, 64, 3, 3, 1, 1, 1},
                            {"conv2d 7x7 s2 C=3 K=64 224x224", 1, 3, 224, 224, 64, 7, 7, 2, 3, 1},
                            {"conv2d 1x1 C=256 K=64 56x56", 1, 256, 56, 56, 64, 1, 1, 1, 0, 1},
                            {"conv2d depthwise 3x3 C=256 28x28", 1, 256, 28, 28, 256, 3, 3, 1, 1, 256}};
  for (const ConvCase& c : cases) {
    if (o.quick && c.n > 1) continue;
    if (!wanted(o, c.name)) continue;
    const long P = (c.h + 2 * c.pad - c.r) / c.stride + 1, Q = (c.w + 2 * c.pad - c.s) / c.stride + 1;
    Input x = input({c.n, c.c, c.h, c.w}, 3), wt = input({c.k, c.c / c.groups, c.r, c.s}, 4), b = input({c.k}, 5);
    trine::Conv2dParams prm;
    prm.stride = c.stride;
    prm.padding = c.pad;
    prm.groups = c.groups;
    const dnnl::memory::dims src_d{c.n, c.c, c.h, c.w}, dst_d{c.n, c.k, P, Q}, bias_d{c.k};
    const dnnl::memory::dims w_d = c.groups > 1 ? dnnl::memory::dims{c.groups, c.k / c.groups, c.c / c.groups, c.r, c.s}
                                                : dnnl::memory::dims{c.k, c.c, c.r, c.s};
    const dnnl::memory::desc bias_md(bias_d, dt::f32, tag::a);
    // oneDNN picks its own layouts (format_tag::any); the NCHW reorders in and out are timed, the
    // weights' reorder is done once, as a user would keep reordered weights.
    const auto pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        dnnl::memory::desc(src_d, dt::f32, tag::any), dnnl::memory::desc(w_d, dt::f32, tag::any),
                                        bias_md, dnnl::memory::desc(dst_d, dt::f32, tag::any), {c.stride, c.stride},
                                        {c.pad, c.pad}, {c.pad, c.pad}),
        eng);
    Buffer dst = aligned_floats(static_cast<std::size_t>(c.n * c.k * P * Q));
    dnnl::memory src_user({src_d, dt::f32, tag::nchw}, eng, x.host.get()), dst_user({dst_d, dt::f32, tag::nchw}, eng, dst.get());
    dnnl::memory w_user({w_d, dt::f32, c.groups > 1 ? tag::goihw : tag::oihw}, eng, wt.host.get());
    dnnl::memory bias_m(bias_md, eng, b.host.get()), src_m(pd.src_desc(), eng), dst_m(pd.dst_desc(), eng), w_m(pd.weights_desc(), eng);
    dnnl::reorder(w_user, w_m).execute(strm, w_user, w_m);
    dnnl::convolution_forward conv(pd);
    dnnl::reorder rin(src_user, src_m), rout(dst_m, dst_user);
    auto onednn = [&] {
      rin.execute(strm, src_user, src_m);
      conv.execute(strm, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_BIAS, bias_m}, {DNNL_ARG_DST, dst_m}});
      rout.execute(strm, dst_m, dst_user);
      strm.wait();
    };
    onednn();
    const std::vector<float> mine = trine::conv2d(x.t, wt.t, prm, b.t).to_vector();
    expect_close(c.name, "oneDNN", mine.data(), dst.get(), mine.size(), 1e-5);
    const Timing t = time_round_robin(o, {{"trine", [&] { Tensor y = trine::conv2d(x.t, wt.t, prm, b.t); }}, {"oneDNN", onednn}});
    const double flops = 2.0 * c.n * c.k * P * Q * (c.c / c.groups) * c.r * c.s;
    row(std::string(c.name) + " vs oneDNN", fmt("%.1f GFLOP/s", flops / t.per_call(0).median / 1e9),
        fmt("%.1f GFLOP/s", flops / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
  }
}

void memory_lines(const Options& o) {
  const long n = 1L << 24;
  const std::string head = "relu/sigmoid/gelu/softmax/dot";
  if (!wanted(o, "memory-bound: STREAM copy and " + head)) return;
  Input x = input({n}, 6), y = input({n}, 7), m = input({4096, 4096}, 8);
  StreamCopy copy(static_cast<std::size_t>(n), o.threads);
  // Each op in turn against the copy, interleaved; GB/s counts the bytes the op must move.
  struct Op {
    const char* name;
    double bytes;
    std::function<void()> run;
  };
  const double B = 4.0 * static_cast<double>(n);
  const std::vector<Op> ops = {{"relu 16M", 2 * B, [&] { Tensor r = trine::relu(x.t); }},
                               {"sigmoid 16M", 2 * B, [&] { Tensor r = trine::sigmoid(x.t); }},
                               {"gelu 16M", 2 * B, [&] { Tensor r = trine::gelu(x.t); }},
                               {"softmax 4096x4096", 2 * B, [&] { Tensor r = trine::softmax(m.t, -1); }},
                               {"dot 16M", 2 * B, [&] { volatile float d = trine::dot(x.t, y.t).item(); (void)d; }}};
  for (const Op& op : ops) {
    if (!o.filter.empty() && std::string(op.name).find(o.filter) == std::string::npos && head.find(o.filter) == std::string::npos) continue;
    const Timing t = time_round_robin(o, {{"trine", op.run}, {"STREAM copy", [&] { copy.run(); }}});
    // Fraction of the copy's rate: (op bytes / op time) / (copy bytes / copy time), per round.
    std::vector<double> frac;
    for (std::size_t r = 0; r < t.seconds[0].size(); ++r)
      frac.push_back((op.bytes / t.seconds[0][r]) / (copy.bytes() / t.seconds[1][r]));
    const Stat f = stat_of(frac);
    row(std::string(op.name) + " vs STREAM copy", fmt("%.1f GB/s", op.bytes / t.per_call(0).median / 1e9),
        fmt("%.1f GB/s", copy.bytes() / t.per_call(1).median / 1e9), ratio_text(f));
  }
}

void gemv_lines(const Options& o) {
  if (!wanted(o, "gemv 4096x4096 and M=1 matmul vs sgemv")) return;
  const long n = 4096;
  Input a = input({n, n}, 9), x = input({n}, 10), xr = input({1, n}, 10);
  Buffer y = aligned_floats(static_cast<std::size_t>(n));
  const int ni = static_cast<int>(n);
  auto sgemv = [&] { cblas_sgemv(CblasRowMajor, CblasNoTrans, ni, ni, 1.0f, a.host.get(), ni, x.host.get(), 1, 0.0f, y.get(), 1); };
  auto sgemv_t = [&] { cblas_sgemv(CblasRowMajor, CblasTrans, ni, ni, 1.0f, a.host.get(), ni, x.host.get(), 1, 0.0f, y.get(), 1); };
  sgemv();
  const std::vector<float> g = trine::gemv(a.t, x.t).to_vector();
  expect_close("gemv", "OpenBLAS", g.data(), y.get(), g.size(), 1e-5);
  sgemv_t();
  const std::vector<float> r = trine::matmul(xr.t, a.t).to_vector();
  expect_close("M=1 matmul", "OpenBLAS", r.data(), y.get(), r.size(), 1e-5);
  const double bytes = 4.0 * n * n;
  Timing t = time_round_robin(o, {{"trine", [&] { Tensor v = trine::gemv(a.t, x.t); }}, {"sgemv", sgemv}});
  row("gemv 4096x4096 vs sgemv", fmt("%.1f GB/s", bytes / t.per_call(0).median / 1e9), fmt("%.1f GB/s", bytes / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
  t = time_round_robin(o, {{"trine", [&] { Tensor v = trine::matmul(xr.t, a.t); }}, {"sgemv", sgemv_t}});
  row("M=1 matmul 1x4096 . 4096x4096 vs sgemv (transposed)", fmt("%.1f GB/s", bytes / t.per_call(0).median / 1e9),
      fmt("%.1f GB/s", bytes / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
}

void bf16_lines(const Options& o, dnnl::engine& eng, dnnl::stream& strm) {
  const long n = o.quick ? 512 : 2048;
  const std::string line = "bf16 matmul n=" + std::to_string(n);
  if (!wanted(o, line)) return;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  Input a = input({n, n}, 11), b = input({n, n}, 12);
  const Tensor a16 = a.t.astype(trine::DType::bf16), b16 = b.t.astype(trine::DType::bf16);
  std::vector<std::uint16_t> ha(a.n), hb(b.n);
  for (std::size_t i = 0; i < a.n; ++i) ha[i] = trine::f32_to_bf16(a.host[i]), hb[i] = trine::f32_to_bf16(b.host[i]);
  const dnnl::memory::dims d{n, n};
  // oneDNN 2.6 has a bf16 matmul only where the CPU has AVX-512 (avx512_core at least); elsewhere
  // it cannot create the primitive, `onednn` stays empty and the line says so.
  Buffer c = aligned_floats(static_cast<std::size_t>(n * n));
  std::function<void()> onednn;
  std::string no_onednn;
  try {
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(dnnl::memory::desc(d, dt::bf16, tag::ab), dnnl::memory::desc(d, dt::bf16, tag::ab),
                           dnnl::memory::desc(d, dt::f32, tag::ab)),
        eng);
    onednn = [&strm, mm = dnnl::matmul(pd), ma = dnnl::memory(pd.src_desc(), eng, ha.data()),
              mb = dnnl::memory(pd.weights_desc(), eng, hb.data()), mc = dnnl::memory(pd.dst_desc(), eng, c.get())] {
      mm.execute(strm, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
      strm.wait();
    };
  } catch (const dnnl::error& e) {
    no_onednn = std::string("oneDNN has no bf16 matmul on this CPU: ") + e.what();
  }
  const std::vector<float> mine = trine::matmul(a16, b16).to_vector();
  std::vector<Contender> cs{{"trine bf16", [&] { Tensor y = trine::matmul(a16, b16); }},
                            {"trine f32", [&] { Tensor y = trine::matmul(a.t, b.t); }}};
  if (onednn) {
    onednn();
    expect_close(line, "oneDNN bf16", mine.data(), c.get(), mine.size(), 1e-4);
    cs.push_back({"oneDNN bf16", onednn});
  }
  const Timing t = time_round_robin(o, cs);
  const double flops = 2.0 * n * n * n;
  const std::string cpu = "trine's bf16 kernel: " + trine::debug::cpu_bf16_matmul() + "; CPU: avx512_bf16 " +
                          (__builtin_cpu_supports("avx512bf16") ? "yes" : "no") + ", amx " +
                          (__builtin_cpu_supports("amx-bf16") ? "yes" : "no");
  row(line + " vs trine f32 (" + cpu + ")", fmt("%.0f GFLOP/s", flops / t.per_call(0).median / 1e9),
      fmt("%.0f GFLOP/s", flops / t.per_call(1).median / 1e9), ratio_text(t.ratio(1)));
  row(line + " vs oneDNN bf16", fmt("%.0f GFLOP/s", flops / t.per_call(0).median / 1e9),
      onednn ? fmt("%.0f GFLOP/s", flops / t.per_call(2).median / 1e9) : "-", onednn ? ratio_text(t.ratio(2)) : no_onednn);
}

void fixed_cost_line(const Options& o) {
  if (!wanted(o, "fixed cost of a sync call (relu on 16 floats)")) return;
  const Tensor x = Tensor::random({16}, 13);
  std::vector<double> us;
  for (int r = 0; r < o.rounds; ++r) {
    const int reps = 20000;
    const double t0 = now();
    for (int i = 0; i < reps; ++i) Tensor y = trine::relu(x);
    us.push_back((now() - t0) / reps * 1e6);
  }
  const Stat s = stat_of(us);
  row("fixed cost of a sync call (relu on 16 floats)", fmt("%.2f us", s.median), "", fmt("%.2f", s.lo) + "-" + fmt("%.2f us", s.hi));
}

double probe_openblas() {
  const int n = 1024;
  Buffer a = aligned_floats(n * n), b = aligned_floats(n * n), c = aligned_floats(n * n);
  for (int i = 0; i < n * n; ++i) a[static_cast<std::size_t>(i)] = 0.5f, b[static_cast<std::size_t>(i)] = 0.25f;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.get(), n, b.get(), n, 0.0f, c.get(), n);
    best = std::max(best, 2.0 * n * n * n / (now() - t0) / 1e9);
  }
  return best;
}

// OpenBLAS's idle threads poll for about 2^28 cycles by default (a tenth of a second) and GNU
// OpenMP's (oneDNN's, Eigen's) for a while too, on the cores the next library's threads then need:
// run directly without the settings below, trine's 2-thread sgemm measured 0.45-0.51 of OpenBLAS
// at n = 256..1024, against 0.91-0.97 with them. Both libraries read these variables when they
// load, before main, so a run that lacks them sets them and starts itself again.
void ensure_quiet_idle_threads(char** argv) {
  const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (timeout && *timeout && policy && *policy) return;
  if (!timeout || !*timeout) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
  if (!policy || !*policy) setenv("OMP_WAIT_POLICY", "passive", 1);
  std::fprintf(stderr,
               "[compare] running again with OPENBLAS_THREAD_TIMEOUT=%s OMP_WAIT_POLICY=%s, so that no "
               "library's idle threads poll on the cores another's need\n",
               std::getenv("OPENBLAS_THREAD_TIMEOUT"), std::getenv("OMP_WAIT_POLICY"));
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "compare: could not start itself again (%s); set both variables and run it again\n",
               std::strerror(errno));
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  ensure_quiet_idle_threads(argv);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--probe-openblas") {
      openblas_set_num_threads(1);
      std::printf("%s %.1f\n", openblas_get_corename(), probe_openblas());
      return 0;
    }
    if (a == "--quick") {
      o.quick = true, o.rounds = 5, o.block_seconds = 0.01;
    } else if (a == "--filter" && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: compare [--quick] [--filter TEXT] [--rounds N] | --probe-openblas\n");
      return 2;
    }
  }
  // The thread count every library gets is trine's: TRINE_NUM_THREADS, which scripts/compare.sh sets.
  const char* th = std::getenv("TRINE_NUM_THREADS");
  if (!th || std::atoi(th) < 1) {
    std::fprintf(stderr, "compare: set TRINE_NUM_THREADS (scripts/compare.sh runs 1 and 2)\n");
    return 2;
  }
  o.threads = std::atoi(th);
  openblas_set_num_threads(o.threads);
  omp_set_num_threads(o.threads);
  Eigen::setNbThreads(o.threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);

  const double peak = fma_peak_gflops(o.threads, o.quick);
  StreamCopy copy(std::size_t{1} << 24, o.threads);
  const Timing ct = time_round_robin(o, {{"copy", [&] { copy.run(); }}});
  std::printf("\n### %d thread%s: trine %s (cpu ISA %s), OpenBLAS %s, Eigen %d.%d.%d, oneDNN %d.%d\n\n", o.threads,
              o.threads == 1 ? "" : "s", trine::version(), trine::debug::cpu_isa().c_str(), openblas_get_corename(),
              EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, dnnl_version()->major, dnnl_version()->minor);
  std::printf("FMA peak %.0f GFLOP/s; STREAM copy (16M floats) %.1f GB/s\n\n", peak, copy.bytes() / ct.per_call(0).median / 1e9);
  std::printf("| line | trine | other | ratio: other time / trine time (range) |\n|---|---|---|---|\n");
  sgemm_lines(o);
  skinny_lines(o);
  conv_lines(o, eng, strm);
  memory_lines(o);
  gemv_lines(o);
  bf16_lines(o, eng, strm);
  fixed_cost_line(o);
  return 0;
}
