// f16 and bf16 through the ops (issue 32): the dtype rules (promotion, what is refused and how),
// rounding once when the result is written, and the 16-bit special values through every family
// whose kernels take them, on the device under test.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

Tensor r(const Shape& s, DType t = DType::f32) { return Tensor::random(s, 11, -1, 1, t); }

template <class F>
std::string error_of(F&& f, ErrorCode& code) {
  try {
    f();
  } catch (const Error& e) {
    code = e.code();
    return e.what();
  }
  code = ErrorCode::internal;
  return "(no error)";
}

// f rounded to the 16-bit format t and back, by the scalar conversions cast is held to.
float round16(DType t, float f) { return t == DType::f16 ? f16_to_f32(f32_to_f16(f)) : bf16_to_f32(f32_to_bf16(f)); }

constexpr float k_inf = std::numeric_limits<float>::infinity();
constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("dtype rules: a 16-bit op result keeps its inputs' dtype, mixed formats give f32", "[dtypes]") {
  const DType f16 = DType::f16, bf16 = DType::bf16, f32 = DType::f32;
  CHECK(relu(r({8}, f16)).dtype() == f16);
  CHECK(gelu(r({8}, bf16)).dtype() == bf16);
  CHECK(scale(r({8}, bf16), 2.0f).dtype() == bf16);
  CHECK(add(r({2, 8}, f16), r({8}, f16)).dtype() == f16);
  CHECK(add(r({8}, f16), r({8}, bf16)).dtype() == f32);
  CHECK(mul(r({8}, f32), r({8}, bf16)).dtype() == f32);
  CHECK(where(r({8}, f16), r({8}, bf16), r({8}, bf16)).dtype() == bf16);  // cond does not count
  CHECK(bias_act(r({3, 8}, f16), r({8}, f16), Activation::silu).dtype() == f16);
  CHECK(bias_act(r({3, 8}, f16), r({8}, f32), Activation::silu).dtype() == f32);
  CHECK(softmax(r({2, 8}, bf16)).dtype() == bf16);
  CHECK(layernorm(r({2, 8}, f16), r({8}, f16), r({8}, f16)).dtype() == f16);
  CHECK(rmsnorm(r({2, 8}, bf16), r({8}, f32)).dtype() == f32);
  CHECK(sum(r({2, 8}, f16), 1).dtype() == f16);
  CHECK(argmax(r({2, 8}, bf16), 1).dtype() == DType::i32);
  CHECK(rope(r({2, 4, 8}, f16)).dtype() == f16);
  CHECK(gemv(r({3, 8}, bf16), r({8}, bf16)).dtype() == bf16);
  CHECK(gemv(r({3, 8}, f16), r({8}, f32)).dtype() == f32);
  CHECK(matmul(r({2, 3}, f16), r({3, 2}, f16)).dtype() == f16);
  CHECK(matmul(r({2, 3}, bf16), r({3, 2}, f32)).dtype() == f32);
  CHECK(dot(r({8}, bf16), r({8}, bf16)).dtype() == bf16);
  CHECK(dot(r({8}, bf16), r({8}, f16)).dtype() == f32);
  CHECK(conv2d(r({1, 2, 4, 4}, f16), r({3, 2, 3, 3}, f16), {}, r({3}, f16)).dtype() == f16);
  CHECK(conv2d(r({1, 2, 4, 4}, f16), r({3, 2, 3, 3}, f32)).dtype() == f32);
  CHECK(attention(r({2, 4}, bf16), r({3, 4}, bf16), r({3, 4}, bf16)).dtype() == bf16);
  // attention's mask does not count: an f32 mask on bf16 q, k and v keeps bf16
  CHECK(attention(r({2, 4}, bf16), r({3, 4}, bf16), r({3, 4}, bf16), Tensor(), r({2, 3})).dtype() == bf16);
}

TEST_CASE("dtype rules: out_dtype picks the result's dtype of matmul, gemv, conv2d and attention", "[dtypes]") {
  const DType f16 = DType::f16, bf16 = DType::bf16, f32 = DType::f32;
  const Device dev = test::test_device();
  auto rd = [&](const Shape& s, DType t) { return Tensor::random(s, 11, -1, 1, t, dev); };
  // a bf16 model asking for f32 logits, and f32 inputs asking for a 16-bit result
  MatmulParams mp;
  mp.out_dtype = f32;
  const Tensor a = rd({4, 8}, bf16), b = rd({8, 5}, bf16);
  const Tensor logits = matmul(a, b, mp);
  CHECK(logits.dtype() == f32);
  mp.out_dtype = bf16;
  CHECK(matmul(a, b, mp).dtype() == bf16);
  // the f32 result is the one the 16-bit result rounds: rounding it gives the default result exactly
  const std::vector<float> wide = logits.to_vector(), narrow = matmul(a, b).to_vector();
  REQUIRE(wide.size() == narrow.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < wide.size(); ++i) wrong += round16(bf16, wide[i]) != narrow[i];
  CHECK(wrong == 0);
  GemvParams gp;
  gp.out_dtype = f16;
  CHECK(gemv(rd({3, 8}, f32), rd({8}, f32), gp).dtype() == f16);
  gp.trans = true;
  CHECK(gemv(rd({8, 3}, bf16), rd({8}, bf16), gp).dtype() == f16);
  Conv2dParams cp;
  cp.out_dtype = f32;
  CHECK(conv2d(rd({1, 2, 4, 4}, f16), rd({3, 2, 3, 3}, f16), cp).dtype() == f32);
  AttentionParams ap;
  ap.out_dtype = f32;
  CHECK(attention(rd({2, 4}, f16), rd({3, 4}, f16), rd({3, 4}, f16), ap).dtype() == f32);
  // out_dtype must be a floating dtype
  ErrorCode code{};
  const std::string m = error_of(
      [&] {
        MatmulParams p;
        p.out_dtype = DType::i32;
        matmul(a, b, p);
      },
      code);
  CHECK(code == ErrorCode::dtype_mismatch);
  CHECK(m.find("[matmul]") != std::string::npos);
  CHECK(m.find("out_dtype") != std::string::npos);
  CHECK(m.find("i32") != std::string::npos);
}

TEST_CASE("dtype rules: a dtype an op does not take is dtype_mismatch naming the op, the dtype and the device",
          "[dtypes]") {
  ErrorCode code{};
  std::string m = error_of([] { relu(Tensor::from(std::vector<std::int32_t>{1, 2}, {2})); }, code);
  CHECK(code == ErrorCode::dtype_mismatch);
  CHECK(m.find("[relu]") != std::string::npos);
  CHECK(m.find("i32") != std::string::npos);
  CHECK(m.find("cpu") != std::string::npos);
  m = error_of([] { add(r({2}, DType::f16), Tensor::from(std::vector<std::int32_t>{1, 2}, {2})); }, code);
  CHECK(code == ErrorCode::dtype_mismatch);
  CHECK(m.find("[add]") != std::string::npos);
  CHECK(m.find("f16") != std::string::npos);
  CHECK(m.find("i32") != std::string::npos);
  // an i32 where a floating tensor belongs, in the ops that took f32 only before
  const Tensor ints = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4}, {4});
  for (auto f : {+[](const Tensor& i) { dot(r({4}, DType::f16), i); },
                 +[](const Tensor& i) {
                   attention(r({1, 4}, DType::bf16), i.reshape({1, 4}), r({1, 4}));
                 },
                 +[](const Tensor& i) {
                   conv2d(r({1, 1, 4, 4}, DType::f16), r({1, 1, 3, 3}), {}, i.slice(0, 0, 1));
                 }}) {
    m = error_of([&] { f(ints); }, code);
    INFO(m);
    CHECK(code == ErrorCode::dtype_mismatch);
    CHECK(m.find("must be f32, f16 or bf16, got i32") != std::string::npos);
  }
}

TEST_CASE("16-bit results are rounded once, from the f32 result, as cast rounds", "[dtypes][numerics]") {
  const Device dev = test::test_device();
  for (DType t : {DType::f16, DType::bf16}) {
    const Tensor a = Tensor::random({4099}, 5, -300, 300, t, dev), b = Tensor::random({4099}, 6, -3, 3, t, dev);
    const Tensor sum_ab = add(a, b), prod = scale(a, 1.0f / 3.0f, 0.25f);
    const std::vector<float> av = a.to_vector(), bv = b.to_vector(), s = sum_ab.to_vector(), p = prod.to_vector();
    std::size_t wrong_s = 0, wrong_p = 0;
    // a + b in f32, rounded once: exactly that (twice, through another format, would differ)
    for (std::size_t i = 0; i < s.size(); ++i) wrong_s += s[i] != round16(t, av[i] + bv[i]);
    // alpha x + beta in f32 (one FMA or two roundings), then one rounding to 16 bits: within the f32
    // result's rounding, so the 16-bit value is the cast of some f32 value within an f32 ulp or two
    for (std::size_t i = 0; i < p.size(); ++i) {
      const float f = av[i] * (1.0f / 3.0f) + 0.25f;
      const float lo = std::nextafter(std::nextafter(f, -k_inf), -k_inf),
                  hi = std::nextafter(std::nextafter(f, k_inf), k_inf);
      wrong_p += !(p[i] >= round16(t, lo) && p[i] <= round16(t, hi));
    }
    INFO(dtype_name(t) << " on " << dev.str());
    CHECK(wrong_s == 0);
    CHECK(wrong_p == 0);
  }
}

TEST_CASE("16-bit special values through every op family that takes them", "[dtypes][numerics]") {
  const Device dev = test::test_device();
  // inf, NaN, the largest finite value, the smallest subnormal and normal, signed zeros, and values
  // whose results overflow the 16-bit format (f16: 300 * 300, e^12, 2 * 60000, sums past 65504)
  const std::vector<float> f16_specials = {k_inf, -k_inf, k_nan, 65504.0f, -65504.0f, 0x1p-24f, 0x1p-14f, -0.0f,
                                           0.0f,  1.0f,   -2.5f, 300.0f,   12.0f,     60000.0f, -11.0f,   0.5f};
  const std::vector<float> bf16_specials = {k_inf,     -k_inf, k_nan,  0x1.fep127f, -0x1.fep127f, 0x1p-133f,
                                            0x1p-126f, -0.0f,  0.0f,   1.0f,        -2.5f,        3e38f,
                                            88.0f,     -90.0f, 1e-20f, 0.5f};
  const std::int64_t n = 16;
  std::size_t ran = 0;
  for (DType t : {DType::f16, DType::bf16}) {
    const std::vector<float>& v = t == DType::f16 ? f16_specials : bf16_specials;
    REQUIRE(static_cast<std::int64_t>(v.size()) == n);
    std::vector<float> w(v.rbegin(), v.rend());  // a second operand: the same values reversed
    const Tensor x = Tensor::from(v, {n}, t, dev), y = Tensor::from(w, {n}, t, dev);
    const Tensor x2 = Tensor::from(v, {2, n / 2}, t, dev),
                 g = Tensor::from(std::vector<float>(w.begin(), w.begin() + n / 2), {n / 2}, t, dev);
    const Tensor x3 = Tensor::from(v, {2, 2, n / 4}, t, dev);
    const Tensor kv = Tensor::from(
        std::vector<float>{1, -0.5f, 0.5f, 0.25f, -1, 0.75f, 0.75f, -0.5f, 0.5f, 0, -0.25f, 1, 0.125f, -1, 1, 0.5f},
        {2, 2, n / 4}, t, dev);
    struct Case {
      OpKind op;
      std::vector<Tensor> in;
      OpParams params;
    };
    std::vector<Case> cases = {
        {OpKind::relu, {x}, ActParams{}},
        {OpKind::exp, {x}, ActParams{}},
        {OpKind::sigmoid, {x}, ActParams{}},
        {OpKind::gelu, {x}, ActParams{}},
        {OpKind::sqrt, {x}, ActParams{}},
        {OpKind::scale, {x}, ScaleParams{2.0f, 0.0f}},
        {OpKind::bias_act, {x2, g}, BiasActParams{Activation::silu, 0, 0}},
        {OpKind::add, {x, y}, NoParams{}},
        {OpKind::mul, {x, y}, NoParams{}},
        {OpKind::div, {x, y}, NoParams{}},
        {OpKind::maximum, {x, y}, NoParams{}},
        {OpKind::where, {y, x, y}, NoParams{}},
        {OpKind::softmax, {x2}, AxisParams{-1}},
        {OpKind::log_softmax, {x2}, AxisParams{0}},
        {OpKind::layernorm, {x2}, NormParams{}},
        {OpKind::rmsnorm, {x2, g}, NormParams{}},
        {OpKind::sum, {x2}, ReduceParams{-1}},
        {OpKind::max, {x2}, ReduceParams{0}},
        {OpKind::argmax, {x2}, ReduceParams{-1}},
        {OpKind::rope, {x3}, RopeParams{}},
        // the products: 16-bit results that overflow (65504^2 in f16), inf * 0 and inf - inf
        {OpKind::matmul, {x2, x2.transpose()}, MatmulParams{}},
        {OpKind::gemv, {x2, g}, GemvParams{}},
        {OpKind::dot, {x, y}, NoParams{}},
        {OpKind::conv2d, {x.reshape({1, 1, 4, 4}), g.slice(0, 0, 4).reshape({1, 1, 2, 2})}, Conv2dParams{}},
        // q with the specials against keys and values within [-1, 1]: a score the f32 kernel
        // overflows (3e38^2, which the double reference holds) would test f32, not 16-bit storage
        {OpKind::attention, {x3, kv, kv}, AttentionParams{}},
    };
    for (const Case& c : cases) {
      test::check_op(c.op, c.in, c.params, std::string(dtype_name(t)) + " special values");
      ++ran;
    }
  }
  CHECK(ran == 50);  // every device runs every case
}

TEST_CASE("16-bit tensors through async calls, a batch and the dispatcher's placement", "[dtypes]") {
  // Host tensors: the dispatcher places each op; the sync, async and batch paths give the same bits.
  for (DType t : {DType::f16, DType::bf16}) {
    std::vector<float> xs(3 * 1000);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 97) - 48) / 8.0f;
    const Tensor x = Tensor::from(xs, {3, 1000}, t);
    const Tensor sync = softmax(add(relu(x), x));
    CHECK(sync.dtype() == t);
    const Tensor via_async = async::softmax(async::add(async::relu(x).get(), x).get()).get();
    CHECK(via_async.dtype() == t);
    CHECK(via_async.to_vector() == sync.to_vector());
    Batch batch;
    const Tensor bx = batch.upload(xs, {3, 1000}, t);
    BatchRead out = batch.read(softmax(add(relu(bx), bx)));
    batch.run();
    CHECK(out.get() == sync.to_vector());
    // the cost model counts 16-bit bytes: half of the f32 call's
    const Tensor x32 = Tensor::from(xs, {3, 1000});
    const std::vector<Tensor> in16{x}, in32{x32};
    CHECK(op_cost(OpKind::relu, in16, ActParams{}).bytes * 2 == op_cost(OpKind::relu, in32, ActParams{}).bytes);
  }
}

TEST_CASE("16-bit calls pinned to the device under test: sync, async and a replayed batch agree bit for bit",
          "[dtypes][numerics]") {
  // On the GPU backends most of these run as their f32 kernels between casts (backends/widen.hpp):
  // the casts are entries of the submission, so a batch records and replays them with the rest.
  const Device dev = test::test_device();
  for (DType t : {DType::f16, DType::bf16}) {
    INFO(dtype_name(t) << " on " << dev.str());
    std::vector<float> xs(3 * 1000), gs(1000);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 97) - 48) / 8.0f;
    for (std::size_t i = 0; i < gs.size(); ++i) gs[i] = 0.5f + static_cast<float>(i % 7) / 4.0f;
    const Tensor x = Tensor::from(xs, {3, 1000}, t, dev), g32 = Tensor::from(gs, {1000}, DType::f32, dev);
    // one dtype through (16-bit result), then a mixed call (f32 gamma: an f32 result), then a view
    const Tensor h = softmax(add(gelu(x), x));
    const Tensor y = rmsnorm(h, g32);
    const Tensor z = sum(relu(x.transpose()), 1);
    CHECK(h.dtype() == t);
    CHECK(y.dtype() == DType::f32);
    CHECK(z.dtype() == t);
    const Tensor ha = async::softmax(async::add(async::gelu(x).get(), x).get()).get();
    CHECK(ha.to_vector() == h.to_vector());
    Batch batch(dev);
    const Tensor bx = batch.upload(xs, {3, 1000}, t), bg = batch.upload(gs, {1000});
    const Tensor bh = softmax(add(gelu(bx), bx));
    BatchRead rh = batch.read(bh), ry = batch.read(rmsnorm(bh, bg)), rz = batch.read(sum(relu(bx.transpose()), 1));
    for (int run = 0; run < 2; ++run) {  // the second run replays the first's recording where it can
      batch.run();
      CHECK(rh.get() == h.to_vector());
      CHECK(ry.get() == y.to_vector());
      CHECK(rz.get() == z.to_vector());
    }
    // and against the cpu: within the op's error (the reference harness bounds it); here, within
    // one unit of the 16-bit result's last place plus what gelu and softmax owe
    const std::vector<float> hc = softmax(add(gelu(x.to(Device::cpu())), x.to(Device::cpu()))).to_vector();
    const std::vector<float> hv = h.to_vector();
    std::size_t far = 0;
    for (std::size_t i = 0; i < hv.size(); ++i)
      far += std::fabs(hv[i] - hc[i]) > std::fabs(hc[i]) * (t == DType::f16 ? 0x1p-9f : 0x1p-6f) + 1e-7f;
    CHECK(far == 0);
  }
}

TEST_CASE("which 16-bit calls read their tensors in a kernel of their own and which run between casts",
          "[dtypes][numerics]") {
  const Device dev = test::test_device();
  const Tensor h = Tensor::random({4, 16}, 1, -1, 1, DType::f16, dev),
               b = Tensor::random({4, 16}, 2, -1, 1, DType::bf16, dev),
               f = Tensor::random({4, 16}, 3, -1, 1, DType::f32, dev),
               hw = Tensor::random({16, 16}, 4, -1, 1, DType::f16, dev);
  const Tensor c = Tensor::random({16}, 5, -1, 1, DType::f16, dev);
  auto between = [](OpKind op, std::vector<Tensor> in, OpParams p) { return debug::runs_between_casts(op, in, p); };
  const bool gpu = dev.kind != DeviceKind::cpu, vk = dev.kind == DeviceKind::vulkan;
  INFO(dev.str());
  CHECK_FALSE(between(OpKind::relu, {f}, ActParams{}));  // no 16-bit tensor: nothing to cast
  // the activations, scale, bias_act and the arithmetic read and write 16-bit on every backend
  CHECK_FALSE(between(OpKind::relu, {h}, ActParams{}));
  CHECK_FALSE(between(OpKind::scale, {b}, ScaleParams{2, 1}));
  CHECK_FALSE(between(OpKind::gelu, {h.transpose()}, ActParams{}));
  CHECK_FALSE(between(OpKind::bias_act, {h, c}, BiasActParams{Activation::gelu, 0, 0}));
  CHECK_FALSE(between(OpKind::add, {h, h}, NoParams{}));
  CHECK_FALSE(between(OpKind::maximum, {b, b.slice(0, 1, 2)}, NoParams{}));
  // Vulkan's pow computes in double, which its 16-bit shader for views does not
  CHECK(between(OpKind::pow, {h.transpose()}, ActParams{2.5f, 0}) == vk);
  // the reductions, norms, rope, where and softmax read and write 16-bit on every backend (Vulkan:
  // their shaders' 16-bit forms) where the floating tensors share one dtype: where's cond may be any
  CHECK_FALSE(between(OpKind::where, {f, b, b}, NoParams{}));
  CHECK_FALSE(between(OpKind::where, {h, h.slice(0, 1, 2), h}, NoParams{}));
  CHECK_FALSE(between(OpKind::sum, {h}, ReduceParams{-1}));
  CHECK_FALSE(between(OpKind::mean, {b.transpose()}, ReduceParams{-1}));
  CHECK_FALSE(between(OpKind::max, {b}, ReduceParams{0}));
  CHECK_FALSE(between(OpKind::argmax, {h}, ReduceParams{0}));
  CHECK_FALSE(between(OpKind::rmsnorm, {h, c}, NormParams{}));
  CHECK_FALSE(between(OpKind::layernorm, {b}, NormParams{}));
  CHECK_FALSE(between(OpKind::rope, {h}, RopeParams{}));
  CHECK_FALSE(between(OpKind::softmax, {h}, AxisParams{-1}));
  CHECK_FALSE(between(OpKind::log_softmax, {b}, AxisParams{0}));
  // a norm whose gamma is f32 mixes dtypes: between casts on the GPU backends
  CHECK(between(OpKind::rmsnorm, {h, Tensor::random({16}, 7, -1, 1, DType::f32, dev)}, NormParams{}) == gpu);
  // gemv reads 16-bit weights against a vector of any float dtype on cuda (a decode step); on Vulkan
  // against an f32 vector or one of the weights' dtype (gemv_b16), not yet transposed
  CHECK_FALSE(between(OpKind::gemv, {hw, c}, GemvParams{}));
  CHECK_FALSE(between(OpKind::gemv, {hw, Tensor::random({16}, 9, -1, 1, DType::f32, dev)}, GemvParams{}));
  CHECK(between(OpKind::gemv, {hw, Tensor::random({16}, 8, -1, 1, DType::f32, dev)}, GemvParams{true}) == vk);
  // a call mixing dtypes runs between casts on every GPU backend (Vulkan's where too)
  CHECK(between(OpKind::add, {h, b}, NoParams{}) == gpu);
  if (vk) CHECK(between(OpKind::where, {f, h, b}, NoParams{}));
  // matmul and the copy family read 16-bit everywhere. matmul's 16-bit result: cuda's tensor-core
  // kernel writes it (f16 @ f16 -> f16, rows aligned to 8 elements); on Vulkan the kernel writes an
  // f32 temporary, cast after (only the output widened); an f32 result needs no cast anywhere
  CHECK(between(OpKind::matmul, {h, hw}, MatmulParams{}) == vk);
  MatmulParams to_f32;
  to_f32.out_dtype = DType::f32;
  CHECK_FALSE(between(OpKind::matmul, {h, hw}, to_f32));
  // cuda's attention and conv2d kernels read and write 16-bit when q, k, v and the result (x, w, the
  // bias and the result) share one dtype; Vulkan's run between casts, and so does dot on both
  CHECK(between(OpKind::dot, {c, c}, NoParams{}) == gpu);
  CHECK(between(OpKind::attention, {h, h, h}, AttentionParams{}) == vk);
  CHECK(between(OpKind::conv2d, {h.reshape({1, 1, 4, 16}), hw.slice(0, 0, 1).reshape({1, 1, 4, 4})}, Conv2dParams{}) ==
        vk);
  AttentionParams attend_f32;
  attend_f32.out_dtype = DType::f32;  // only the result widened on cuda
  CHECK(between(OpKind::attention, {h, h, h}, attend_f32) == gpu);
  CHECK_FALSE(between(OpKind::cast, {h}, CastParams{DType::f32}));
  // bad inputs fail as the op would
  CHECK_THROWS_AS(between(OpKind::add, {h, Tensor::random({3}, 6, -1, 1, DType::f16, dev)}, NoParams{}), Error);
}

TEST_CASE("gemv with 16-bit weights against a vector of another dtype, both layouts", "[dtypes][numerics]") {
  // A decode step's gemv: the weights stored f16 or bf16, the activations f32 (an f32 result) or
  // the other 16-bit format; against the reference, on the device under test.
  for (DType w : {DType::f16, DType::bf16}) {
    for (DType x : {DType::f32, w == DType::f16 ? DType::bf16 : DType::f16}) {
      for (bool trans : {false, true}) {
        const Shape ws = trans ? Shape{53, 37} : Shape{37, 53};
        test::check_op(OpKind::gemv,
                       {test::make_input(ws, 40, test::View::contiguous, w),
                        test::make_input({53}, 41, test::View::contiguous, x)},
                       GemvParams{trans},
                       std::string("weights ") + dtype_name(w) + ", x " + dtype_name(x) + (trans ? ", trans" : ""));
      }
    }
  }
}
