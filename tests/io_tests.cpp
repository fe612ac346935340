// Model files (trine::io): GGUF and safetensors written and read back, files laid out by hand from
// the formats' specifications (not by our writer), and malformed files, each an Error naming the
// file, never a read outside it. Tagged "[io]"; the tensors load onto the device under test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;
using io::Value;
using io::ValueType;

namespace {

using test::code_of;
using Bytes = std::vector<unsigned char>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("trine-io-" + std::to_string(::getpid()) + "-" + name)).string();
}

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Bytes read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

template <class T>
void put(Bytes& b, T v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
void put_string(Bytes& b, const std::string& s) {
  put<std::uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

// The error a load raises, with its message, for the bytes given.
std::pair<ErrorCode, std::string> load_error(bool gguf, const Bytes& bytes) {
  const std::string path = temp_path(gguf ? "bad.gguf" : "bad.safetensors");
  write_bytes(path, bytes);
  try {
    if (gguf) {
      io::load_gguf(path, test::test_device());
    } else {
      io::load_safetensors(path, test::test_device());
    }
  } catch (const Error& e) {
    std::filesystem::remove(path);
    return {e.code(), e.what()};
  }
  std::filesystem::remove(path);
  return {ErrorCode::internal, "no error"};
}

// A malformed file, the error its load must raise, and a phrase of its message.
struct BadFile {
  const char* what;
  Bytes bytes;
  ErrorCode code;
  const char* says;
};

template <std::size_t N>
void check_bad_files(bool gguf, const BadFile (&cases)[N]) {
  for (const BadFile& c : cases) {
    INFO(c.what);
    const auto [code, message] = load_error(gguf, c.bytes);
    CHECK(code == c.code);
    CHECK_THAT(message, Catch::Contains(c.says) && Catch::Contains(gguf ? "bad.gguf" : "bad.safetensors"));
  }
}

// A GGUF file laid out by hand: one u32 metadata entry, then tensors [2 rows, 3 columns] f32 (ggml's
// dims 3, 2: innermost first) and [4] f16, each at an offset that is a multiple of 32.
Bytes hand_gguf(std::uint32_t f16_type = 1, std::uint64_t second_offset = 32) {
  Bytes b{'G', 'G', 'U', 'F'};
  put<std::uint32_t>(b, 3);
  put<std::uint64_t>(b, 2);  // tensors
  put<std::uint64_t>(b, 1);  // metadata
  put_string(b, "llama.block_count");
  put<std::uint32_t>(b, 4);  // u32
  put<std::uint32_t>(b, 7);
  put_string(b, "w");
  put<std::uint32_t>(b, 2);
  put<std::uint64_t>(b, 3);
  put<std::uint64_t>(b, 2);
  put<std::uint32_t>(b, 0);  // f32
  put<std::uint64_t>(b, 0);
  put_string(b, "h");
  put<std::uint32_t>(b, 1);
  put<std::uint64_t>(b, 4);
  put<std::uint32_t>(b, f16_type);
  put<std::uint64_t>(b, second_offset);
  b.resize((b.size() + 31) / 32 * 32, 0);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) put(b, v);
  b.resize(b.size() + 8, 0);  // to offset 32
  for (std::uint16_t h : {0x3C00, 0xC000, 0x3800, 0x7BFF}) put(b, h);  // 1, -2, 0.5, 65504
  return b;
}

// A safetensors file laid out by hand: "a" F32 [2, 2] and "b" BF16 [3], with a metadata string.
Bytes hand_safetensors(const std::string& header_override = "") {
  const std::string header = header_override.empty()
                                 ? R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},)"
                                   R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})"
                                 : header_override;
  Bytes b;
  put<std::uint64_t>(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  for (float v : {1.f, -2.f, 3.5f, 4.f}) put(b, v);
  for (std::uint16_t h : {0x3F80, 0xC040, 0x4120}) put(b, h);  // 1, -3, 10
  return b;
}

}  // namespace

TEST_CASE("model files laid out by hand from the GGUF and safetensors specifications load", "[io]") {
  const Device dev = test::test_device();
  SECTION("GGUF: metadata, dims innermost first, f32 and f16") {
    const std::string path = temp_path("hand.gguf");
    write_bytes(path, hand_gguf());
    const io::ModelFile f = io::load_gguf(path, dev);
    std::filesystem::remove(path);
    CHECK(f.format == "gguf");
    CHECK(f.value("llama.block_count").type == ValueType::u32);
    CHECK(f.value("llama.block_count").as_int() == 7);
    REQUIRE(f.tensors.size() == 2);
    CHECK(f.tensors[0].first == "w");
    const Tensor& w = f.tensor("w");
    CHECK(w.shape() == Shape{2, 3});
    CHECK(w.dtype() == DType::f32);
    CHECK(w.device() == dev);
    CHECK(w.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(w.at({1, 0}) == 4.0f);  // row 1 starts with the file's fourth value
    CHECK(f.tensor("h").dtype() == DType::f16);
    CHECK(f.tensor("h").to_vector() == std::vector<float>{1, -2, 0.5f, 65504});
    CHECK(code_of([&] { f.tensor("nope"); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { f.value("nope"); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { f.value("llama.block_count").as_string(); }) == ErrorCode::invalid_argument);
  }
  SECTION("safetensors: metadata, F32 and BF16, the header's order kept") {
    const std::string path = temp_path("hand.safetensors");
    write_bytes(path, hand_safetensors());
    const io::ModelFile f = io::load_safetensors(path, dev);
    std::filesystem::remove(path);
    CHECK(f.value("format").as_string() == "pt");
    REQUIRE(f.tensors.size() == 2);
    CHECK(f.tensors[0].first == "b");
    CHECK(f.tensor("a").shape() == Shape{2, 2});
    CHECK(f.tensor("a").to_vector() == std::vector<float>{1, -2, 3.5f, 4});
    CHECK(f.tensor("b").dtype() == DType::bf16);
    CHECK(f.tensor("b").device() == dev);
    CHECK(f.tensor("b").to_vector() == std::vector<float>{1, -3, 10});
  }
}

TEST_CASE("model files written by the gguf and safetensors packages (PyPI) load with every value", "[io]") {
  // tests/io/make_known_files.py wrote them; the values here are its formulas.
  const Device dev = test::test_device();
  const std::string dir = std::string(TRINE_SOURCE_DIR) + "/tests/io/";
  auto check_common = [&](const io::ModelFile& f) {
    const Tensor& w = f.tensor("w");  // numpy (2, 3): ggml's dims 3, 2
    CHECK(w.shape() == Shape{2, 3});
    CHECK(w.device() == dev);
    CHECK(w.to_vector() == std::vector<float>{-1, -0.75f, -0.5f, -0.25f, 0, 0.25f});
    CHECK(f.tensor("h").shape() == Shape{2, 2, 2});
    CHECK(f.tensor("h").dtype() == DType::f16);
    CHECK(f.tensor("h").to_vector() == std::vector<float>{-2, -1.5f, -1, -0.5f, 0, 0.5f, 1, 1.5f});
    CHECK(f.tensor("i").dtype() == DType::i32);
    CHECK(f.tensor("i").to_vector<std::int32_t>() == std::vector<std::int32_t>{-10, -3, 4, 11, 18});
  };
  SECTION("GGUF") {
    const io::ModelFile f = io::load_gguf(dir + "known.gguf", dev);
    check_common(f);
    CHECK(f.tensor("bf").dtype() == DType::bf16);
    CHECK(f.tensor("bf").to_vector() == std::vector<float>{1, 1.0078125f, 1.015625f, 1.0234375f});
    CHECK(f.value("general.architecture").as_string() == "llama");
    CHECK(f.value("llama.block_count").type == ValueType::u32);
    CHECK(f.value("llama.block_count").as_int() == 2);
    CHECK(f.value("llama.rope.freq_base").as_double() == 10000.0);
    CHECK(f.value("tokenizer.ggml.tokens").item_type == ValueType::string);
    REQUIRE(f.value("tokenizer.ggml.tokens").as_array().size() == 3);
    CHECK(f.value("tokenizer.ggml.tokens").as_array()[1].as_string() == "</s>");
    CHECK(f.value("flag").as_bool());
  }
  SECTION("safetensors") {
    const io::ModelFile f = io::load_safetensors(dir + "known.safetensors", dev);
    check_common(f);
    CHECK(f.value("format").as_string() == "np");
  }
}

TEST_CASE("GGUF's block formats dequantize to the gguf package's values, and q8_0/q4_0 quantize bit for bit", "[io]") {
  // tests/io/make_quant_file.py wrote quants.gguf with the gguf package: each quantized tensor
  // beside its dequantization by gguf.quants, and x's q8_0 and q4_0 blocks also as metadata bytes.
  const Device dev = test::test_device();
  const std::string path = std::string(TRINE_SOURCE_DIR) + "/tests/io/quants.gguf";
  CHECK(code_of([&] { io::load_gguf(path, dev, DType::i32); }) == ErrorCode::dtype_mismatch);
  CHECK(code_of([&] { io::load_gguf(path, dev, DType::q4_k); }) == ErrorCode::dtype_mismatch);

  // Without quantized_as each quantized tensor keeps its blocks: a tensor of that dtype, whose
  // values read back (dequantized on the host) are the package's, and which save_gguf writes back
  // byte for byte.
  const io::ModelFile blocks = io::load_gguf(path, dev);
  const std::string again = temp_path("quants_again.gguf");
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& [name, dtype] :
       {std::pair{"x.q8_0", DType::q8_0}, std::pair{"x.q4_0", DType::q4_0}, std::pair{"r.q4_k", DType::q4_k},
        std::pair{"r.q5_k", DType::q5_k}, std::pair{"r.q6_k", DType::q6_k}}) {
    INFO(name);
    const Tensor& q = blocks.tensor(name);
    CHECK(q.dtype() == dtype);
    CHECK(q.device() == dev);
    const std::vector<float> want = blocks.tensor(std::string(name) + ".expected").to_vector();
    const std::vector<float> got = q.to_vector();
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), 4 * got.size()) == 0);
    CHECK(q.at({1, 5}) == want[static_cast<std::size_t>(q.dim(1) + 5)]);
    kept.emplace_back(name, q);
  }
  io::save_gguf(again, kept);
  const io::ModelFile reread = io::load_gguf(again, dev);
  for (const auto& [name, q] : kept) {
    INFO(name);
    auto blocks_of = [](const Tensor& t) {
      std::vector<std::uint8_t> b = debug::storage_bytes(t);
      b.resize(dtype_bytes(t.dtype(), t.numel()));
      return b;
    };
    CHECK(reread.tensor(name).dtype() == q.dtype());
    CHECK(blocks_of(reread.tensor(name)) == blocks_of(q));
  }
  std::remove(again.c_str());

  const io::ModelFile f32 = io::load_gguf(path, dev, DType::f32);
  const io::ModelFile f16 = io::load_gguf(path, dev, DType::f16);
  for (const char* name : {"x.q8_0", "x.q4_0", "r.q4_k", "r.q5_k", "r.q6_k"}) {
    INFO(name);
    const std::vector<float> want = f32.tensor(std::string(name) + ".expected").to_vector();
    const Tensor& got = f32.tensor(name);
    CHECK(got.dtype() == DType::f32);
    CHECK(got.device() == dev);
    CHECK(got.shape() == f32.tensor(std::string(name) + ".expected").shape());
    const std::vector<float> g = got.to_vector();
    REQUIRE(g.size() == want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < g.size(); ++i) differ += std::memcmp(&g[i], &want[i], 4) != 0;
    CHECK(differ == 0);  // the same f32 arithmetic, the same values
    const Tensor& h = f16.tensor(name);
    CHECK(h.dtype() == DType::f16);
    const std::vector<float> hv = h.to_vector();
    differ = 0;
    for (std::size_t i = 0; i < hv.size(); ++i) differ += hv[i] != f16_to_f32(f32_to_f16(want[i]));
    CHECK(differ == 0);  // one rounding, from the f32 value
  }
  const std::vector<float> x = f32.tensor("x").to_vector();
  for (const auto& [name, format] : {std::pair{"x.q8_0", quant::Format::q8_0}, std::pair{"x.q4_0", quant::Format::q4_0}}) {
    INFO(name);
    std::vector<std::uint8_t> want;
    for (const Value& v : f32.value(std::string(name) + ".bytes").as_array()) want.push_back(static_cast<std::uint8_t>(v.as_int()));
    const std::vector<std::uint8_t> mine = quant::quantize(x, format);
    CHECK(mine == want);
    std::vector<float> back(x.size());
    quant::dequantize(mine, format, back);
    CHECK(back == f32.tensor(std::string(name) + ".expected").to_vector());
    const Tensor t = quant::dequantize(mine, format, {2, 64}, DType::bf16, dev);
    CHECK(t.dtype() == DType::bf16);
    CHECK(t.at({1, 63}) == bf16_to_f32(f32_to_bf16(back[127])));
  }
  CHECK(quant::bytes_for(quant::Format::q6_k, 512) == 420);
  CHECK(code_of([&] { quant::quantize(std::span(x).first(40), quant::Format::q8_0); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { quant::bytes_for(quant::Format::q4_k, 255); }) == ErrorCode::invalid_shape);
  const std::vector<std::uint8_t> q = quant::quantize(x, quant::Format::q8_0);
  CHECK(quant::dequantize(q, quant::Format::q8_0, {4, 32}, DType::f32, dev).to_vector() ==
        quant::dequantize(q, quant::Format::q8_0, {2, 64}, DType::f32, dev).to_vector());
  CHECK(code_of([&] { quant::dequantize(q, quant::Format::q8_0, {8, 16}, DType::f32, dev); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { quant::dequantize(q, quant::Format::q8_0, {3, 64}, DType::f32, dev); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { quant::dequantize(q, quant::Format::q8_0, {2, 64}, DType::i32, dev); }) == ErrorCode::dtype_mismatch);
}

TEST_CASE("the k-quants quantize byte for byte as ggml's reference quantizers", "[io]") {
  // tests/io/make_kquant_file.py ran ggml's quantize_row_q{4,5,6}_K_ref on six super-blocks (one
  // all zero, one all positive, an outlier, values near 1e-6 and near 1e3) and stored the blocks.
  const io::ModelFile f = io::load_gguf(std::string(TRINE_SOURCE_DIR) + "/tests/io/kquants.gguf", test::test_device(),
                                        DType::f32);
  const std::vector<float> x = f.tensor("x").to_vector();
  REQUIRE(x.size() == 6 * 256);
  for (const auto& [name, format] : {std::pair{"x.q4_k", quant::Format::q4_k}, std::pair{"x.q5_k", quant::Format::q5_k},
                                     std::pair{"x.q6_k", quant::Format::q6_k}}) {
    INFO(name);
    std::vector<std::uint8_t> want;
    for (const Value& v : f.value(std::string(name) + ".bytes").as_array()) want.push_back(static_cast<std::uint8_t>(v.as_int()));
    const std::vector<std::uint8_t> mine = quant::quantize(x, format);
    REQUIRE(mine.size() == want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < mine.size(); ++i) differ += mine[i] != want[i];
    CHECK(differ == 0);
    // And what they hold: the weights within the format's step of themselves (the all-zero block exactly).
    std::vector<float> back(x.size());
    quant::dequantize(mine, format, back);
    CHECK(f.tensor(name).to_vector() == back);
    CHECK(std::all_of(back.begin() + 256, back.begin() + 512, [](float v) { return v == 0.0f; }));
  }
}

TEST_CASE("model files written by trine read back the same, on the device under test", "[io]") {
  const Device dev = test::test_device();
  const Tensor a = Tensor::random({3, 5}, 1, {.device = dev});
  const Tensor at = a.transpose(0, 1);  // a view: saved contiguous
  const std::vector<std::uint16_t> hbits{0x0001, 0x7C00, 0xFC00, 0x8000, 0x3555};  // subnormal, +-inf, -0
  const Tensor h = Tensor::from_bits(hbits, {5}, DType::f16, dev);
  const Tensor bf = Tensor::random({2, 2, 2}, 2, {.dtype = DType::bf16, .device = dev});
  const Tensor i = Tensor::from({{1, -2}, {2147483647, 0}}, dev);
  const Tensor scalar = Tensor::full({}, 2.5f, DType::f32, dev);
  const Tensor empty = Tensor::zeros({0, 4}, DType::f32, dev);
  const std::vector<std::pair<std::string, Tensor>> tensors{
      {"a.T", at}, {"h", h}, {"bf", bf}, {"i", i}, {"scalar", scalar}, {"empty", empty}};
  auto same = [&](const io::ModelFile& f, bool gguf) {
    REQUIRE(f.tensors.size() == tensors.size());
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      const auto& [name, t] = tensors[k];
      INFO(name);
      CHECK(f.tensors[k].first == name);
      const Tensor& got = f.tensor(name);
      CHECK(got.dtype() == t.dtype());
      CHECK(got.device() == dev);
      if (gguf && t.shape().rank() == 0) {
        CHECK(got.shape() == Shape{1});
      } else {
        CHECK(got.shape() == t.shape());
      }
      if (t.dtype() == DType::i32) {
        CHECK(got.to_vector<std::int32_t>() == t.to_vector<std::int32_t>());
      } else {
        const std::vector<float> x = got.to_vector(), y = t.to_vector();
        REQUIRE(x.size() == y.size());
        for (std::size_t e = 0; e < x.size(); ++e) CHECK(std::memcmp(&x[e], &y[e], 4) == 0);  // -0 stays -0
      }
    }
  };
  SECTION("safetensors") {
    const std::string path = temp_path("round.safetensors");
    io::save_safetensors(path, tensors, {{"note", "quote \" backslash \\ tab \t é"}, {"k", ""}});
    const Bytes b = read_bytes(path);
    std::uint64_t n = 0;
    std::memcpy(&n, b.data(), 8);
    CHECK((8 + n) % 8 == 0);  // the data starts 8-byte aligned
    const io::ModelFile f = io::load_safetensors(path, dev);
    std::filesystem::remove(path);
    same(f, false);
    CHECK(f.value("note").as_string() == "quote \" backslash \\ tab \t é");
    CHECK(f.value("k").as_string().empty());
  }
  SECTION("GGUF, with every metadata type") {
    const std::string path = temp_path("round.gguf");
    const std::vector<std::pair<std::string, Value>> meta{
        {"general.architecture", Value::of("llama")},
        {"u8", Value::of_int(ValueType::u8, 255)},
        {"i8", Value::of_int(ValueType::i8, -128)},
        {"u16", Value::of_int(ValueType::u16, 65535)},
        {"i16", Value::of_int(ValueType::i16, -32768)},
        {"i32", Value::of_int(ValueType::i32, -5)},
        {"i64", Value::of_int(ValueType::i64, -(std::int64_t{1} << 40))},
        {"u64", Value::of_u64(~std::uint64_t{0})},
        {"f32", Value::of_float(ValueType::f32, 0.1)},
        {"f64", Value::of_float(ValueType::f64, 0.1)},
        {"yes", Value::of_bool(true)},
        {"tokens", Value::of_array(ValueType::string, {Value::of("<s>"), Value::of(""), Value::of("é")})},
        {"nested", Value::of_array(ValueType::array, {Value::of_array(ValueType::i32, {Value::of_int(ValueType::i32, 3)}),
                                                      Value::of_array(ValueType::i32, {})})},
        {"general.alignment", Value::of_int(ValueType::u32, 64)}};
    io::save_gguf(path, tensors, meta);
    const io::ModelFile f = io::load_gguf(path, dev);
    std::filesystem::remove(path);
    same(f, true);
    REQUIRE(f.metadata.size() == meta.size());
    CHECK(f.value("general.architecture").as_string() == "llama");
    CHECK(f.value("u8").as_int() == 255);
    CHECK(f.value("i8").as_int() == -128);
    CHECK(f.value("u16").as_int() == 65535);
    CHECK(f.value("i16").as_int() == -32768);
    CHECK(f.value("i32").as_int() == -5);
    CHECK(f.value("i64").as_int() == -(std::int64_t{1} << 40));
    CHECK(f.value("u64").unsigned_int == ~std::uint64_t{0});
    CHECK(code_of([&] { f.value("u64").as_int(); }) == ErrorCode::invalid_argument);
    CHECK(f.value("f32").as_double() == static_cast<double>(0.1f));
    CHECK(f.value("f64").as_double() == 0.1);
    CHECK(f.value("yes").as_bool());
    CHECK(f.value("tokens").as_array()[2].as_string() == "é");
    CHECK(f.value("nested").as_array()[0].as_array()[0].as_int() == 3);
    CHECK(f.value("nested").as_array()[1].as_array().empty());
  }
  SECTION("a save that fails leaves the file that was there") {
    const std::string path = temp_path("kept.safetensors");
    io::save_safetensors(path, {{"x", scalar}});
    const Bytes before = read_bytes(path);
    CHECK(code_of([&] { io::save_safetensors(path, {{"x", scalar}, {"x", h}}); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { io::save_safetensors(path, {{"y", Tensor()}}); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { io::save_gguf(path, {{"", scalar}}); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] {
            io::save_gguf(path, {{"x", scalar}}, {{"general.alignment", Value::of_int(ValueType::u32, 48)}});
          }) == ErrorCode::invalid_argument);
    CHECK(read_bytes(path) == before);
    CHECK(!std::filesystem::exists(path + ".partial"));
    std::filesystem::remove(path);
    CHECK(code_of([&] { io::save_gguf("/nonexistent-dir/x.gguf", {{"x", scalar}}); }) == ErrorCode::invalid_argument);
  }
}

TEST_CASE("malformed model files are errors naming the file, whatever they claim", "[io]") {
  SECTION("every truncation of a valid file") {
    for (const bool gguf : {true, false}) {
      const Bytes whole = gguf ? hand_gguf() : hand_safetensors();
      for (std::size_t n = 0; n < whole.size(); ++n) {
        INFO((gguf ? "gguf" : "safetensors") << " cut to " << n << " bytes");
        const auto [code, message] = load_error(gguf, Bytes(whole.begin(), whole.begin() + static_cast<long>(n)));
        CHECK(code == ErrorCode::invalid_argument);
        CHECK(message.find(gguf ? "bad.gguf" : "bad.safetensors") != std::string::npos);
      }
    }
  }
  SECTION("GGUF") {
    auto patched = [](std::size_t at, auto value) {
      Bytes b = hand_gguf();
      std::memcpy(b.data() + at, &value, sizeof value);
      return b;
    };
    const std::size_t kv_end = 4 + 4 + 8 + 8 + 8 + 17 + 4 + 4;  // after the metadata entry
    const std::size_t w_dims = kv_end + 8 + 1 + 4;               // tensor "w"'s first dim
    const BadFile cases[] = {
        {"bad magic", patched(0, std::uint32_t{0x46554747 + 1}), ErrorCode::invalid_argument, "not a GGUF file"},
        {"version 1", patched(4, std::uint32_t{1}), ErrorCode::invalid_argument, "version 1"},
        {"big-endian", patched(4, std::uint32_t{0x03000000}), ErrorCode::invalid_argument, "big-endian"},
        {"a huge tensor count", patched(8, ~std::uint64_t{0}), ErrorCode::invalid_argument, "tensors, more than"},
        {"a huge metadata count", patched(16, std::uint64_t{1} << 60), ErrorCode::invalid_argument, "metadata entries"},
        {"a huge key length", patched(24, std::uint64_t{1} << 62), ErrorCode::invalid_argument, "past the end"},
        {"an unknown value type", patched(24 + 8 + 17, std::uint32_t{13}), ErrorCode::invalid_argument,
         "unknown value type"},
        {"absurd dims", patched(w_dims, std::uint64_t{1} << 61), ErrorCode::invalid_argument, "absurd"},
        {"a dim past 2^62", patched(w_dims, ~std::uint64_t{0}), ErrorCode::invalid_argument, "dimension"},
        {"rank 9", patched(w_dims - 4, std::uint32_t{9}), ErrorCode::invalid_argument, "9 dims"},
        {"an unknown ggml type", hand_gguf(99), ErrorCode::invalid_argument, "unknown ggml type 99"},
        {"a quantized type", hand_gguf(3), ErrorCode::unsupported, "q4_1"},
        {"q8_0 rows not whole blocks", hand_gguf(8), ErrorCode::invalid_argument, "not whole blocks of 32"},
        {"f64", hand_gguf(28), ErrorCode::unsupported, "f64"},
        {"a misaligned offset", hand_gguf(1, 33), ErrorCode::invalid_argument, "not a multiple of the alignment"},
        {"an offset past the end", hand_gguf(1, 64), ErrorCode::invalid_argument, "ends past the data"},
        {"overlapping tensors", hand_gguf(1, 0), ErrorCode::invalid_argument, "overlap"},
    };
    check_bad_files(true, cases);
    CHECK(code_of([] { io::load_gguf(temp_path("missing.gguf")); }) == ErrorCode::invalid_argument);
  }
  SECTION("safetensors") {
    const char* const a = R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})";
    auto with = [&](const std::string& b_entry) { return hand_safetensors("{" + std::string(a) + "," + b_entry + "}"); };
    Bytes huge_header = hand_safetensors();
    const std::uint64_t big = std::uint64_t{1} << 40;
    std::memcpy(huge_header.data(), &big, 8);
    const BadFile cases[] = {
        {"a huge header", huge_header, ErrorCode::invalid_argument, "header of"},
        {"not JSON", hand_safetensors("{\"a\":"), ErrorCode::invalid_argument, "header JSON"},
        {"not an object", hand_safetensors("[1,2]"), ErrorCode::invalid_argument, "not a JSON object"},
        {"deep nesting", hand_safetensors(std::string(40, '[') + std::string(40, ']')), ErrorCode::invalid_argument,
         "nests deeper"},
        {"a lone surrogate", hand_safetensors(R"({"\ud800":1})"), ErrorCode::invalid_argument, "surrogate"},
        {"a size that disagrees", with(R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[16,22]})"),
         ErrorCode::invalid_argument, "take 8"},
        {"past the end", with(R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[18,24]})"), ErrorCode::invalid_argument,
         "past the data"},
        {"overlapping", with(R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[10,16]})"), ErrorCode::invalid_argument,
         "overlap"},
        {"a negative dim", with(R"("b":{"dtype":"BF16","shape":[-3],"data_offsets":[16,22]})"),
         ErrorCode::invalid_argument, "shape"},
        {"a fractional offset", with(R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22.0]})"),
         ErrorCode::invalid_argument, "data_offsets"},
        {"an unknown dtype", with(R"("b":{"dtype":"Q4","shape":[3],"data_offsets":[16,22]})"),
         ErrorCode::invalid_argument, "unknown dtype"},
        {"I16", with(R"("b":{"dtype":"I16","shape":[3],"data_offsets":[16,22]})"), ErrorCode::unsupported, "I16"},
        {"a duplicate", hand_safetensors("{" + std::string(a) + "," + a + "}"), ErrorCode::invalid_argument, "twice"},
        {"metadata not strings", hand_safetensors(R"({"__metadata__":{"n":1}})"), ErrorCode::invalid_argument,
         "not a string"},
    };
    check_bad_files(false, cases);
  }
}
