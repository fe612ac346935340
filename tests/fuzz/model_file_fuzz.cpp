// libFuzzer target for the model-file parsers (tensor/gguf.cpp, tensor/safetensors.cpp): each input
// goes to both. Every rejection must be a trine::Error, invalid_argument (malformed) or unsupported
// (an element type trine does not hold); any other exception, a crash, a sanitizer report, a hang
// or a memory blow-up is a finding. A header that parses must satisfy what the loader relies on
// without checking: every tensor's bytes inside the input, its byte count its shape's, no overlap.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "tensor/io_file.hpp"

namespace io = trine::io::detail;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "model_file_fuzz: %s\n", what.c_str());
  std::abort();
}

void check(const io::ParsedFile& f, std::size_t size) {
  std::vector<const io::TensorEntry*> live;
  for (const io::TensorEntry& t : f.tensors) {
    std::uint64_t n = 1;
    for (std::int64_t d : t.dims) {
      if (d < 0) finding("tensor '" + t.name + "' with a negative dim");
      n *= static_cast<std::uint64_t>(d);
    }
    if (t.dims.size() > 8) finding("tensor '" + t.name + "' of rank " + std::to_string(t.dims.size()));
    const std::uint64_t want =
        t.format ? n / static_cast<std::uint64_t>(trine::quant::info(*t.format).block_elems) *
                       static_cast<std::uint64_t>(trine::quant::info(*t.format).block_bytes)
                 : n * trine::dtype_size(t.dtype);
    if (t.format && (t.dims.empty() || t.dims.back() % trine::quant::info(*t.format).block_elems != 0))
      finding("quantized tensor '" + t.name + "' whose rows are not whole blocks");
    if (want != t.bytes) finding("tensor '" + t.name + "' whose bytes are not its shape's");
    if (t.offset > size || t.bytes > size - t.offset) finding("tensor '" + t.name + "' outside the input");
    if (t.bytes) live.push_back(&t);
  }
  std::sort(live.begin(), live.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < live.size(); ++i)
    if (live[i - 1]->offset + live[i - 1]->bytes > live[i]->offset) finding("overlapping tensors passed");
}

void run(const char* which, io::ParsedFile (*parse)(const std::string&, const unsigned char*, std::size_t),
         const std::uint8_t* data, std::size_t size) {
  try {
    check(parse("fuzz-input", data, size), size);
  } catch (const trine::Error& e) {
    if (e.code() != trine::ErrorCode::invalid_argument && e.code() != trine::ErrorCode::unsupported)
      finding(std::string(which) + ": an error of code " + trine::error_code_name(e.code()) + ": " + e.what());
  } catch (const std::exception& e) {
    finding(std::string(which) + ": a non-trine exception: " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run("gguf", io::parse_gguf, data, size);
  run("safetensors", io::parse_safetensors, data, size);
  return 0;
}
