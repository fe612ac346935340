// The conformance samples of the products (see samples.hpp): matmul, gemv and dot, the largest
// families' tables, apart from samples.cpp's switch.
#include <algorithm>
#include <string>

#include "ops/samples_build.hpp"

namespace trine::samples::build {

void matmul_cases(std::vector<Sample>& out) {
  auto run = [&](Shape as, Shape bs, MatmulParams p, Layout la = L::contiguous, Layout lb = L::contiguous,
                 DType ta = DType::f32, DType tb = DType::f32) {
    std::string note = std::string(p.trans_a ? "ta " : "") + (p.trans_b ? "tb" : "");
    if (p.out_dtype) note += std::string(note.empty() ? "" : " ") + "out " + dtype_name(*p.out_dtype);
    out.push_back({{in(std::move(as), -1, 1, la, ta), in(std::move(bs), -1, 1, lb, tb)}, p, note});
  };
  for (auto s : k_sizes) {
    if (s <= 256) run({s, s}, {s, s}, {});
    run({s, 33}, {33, 7}, {});
    run({1, s}, {s, 31}, {});
    run({3, 1}, {1, s}, {});
  }
  run({3, 1000}, {1000, 7}, {});
  run({1000, 3}, {3, 5}, {});
  run({129, 257}, {257, 65}, {});
  run({384, 512}, {512, 320}, {});  // large: several cache blocks in every dimension
  // The large cases marked cpu_blocks() below are there for the cpu's cache blocks and register tiles,
  // which the GPUs' kernels do not have (their grids of several tiles are reached by the two
  // cases above): cpu_only keeps their 900M multiply-adds off the software devices (lavapipe
  // under GPU-assisted validation, the emulator under ASan), where they were most of matmul's time.
  auto cpu_blocks = [&] { out.back().cpu_only = true; };
  // More rows than any ISA's packed A block (mc <= 1536, mc_l3 about 1020 at kc 512): B packed a
  // whole block at a time, over several A blocks; more columns than any B block (nc_l2 <= 1024,
  // nc <= 1365): several, the last one partial. Fewer rows than one A block: B packed one
  // micro-panel at a time.
  run({1543, 24}, {24, 1500}, {});
  cpu_blocks();
  run({7, 19}, {19, 2900}, {});
  // Few rows whose last 6-row tile would hold 1-3: with 6-row tiles (AVX2, SSE4.2) the last 7-9
  // rows run as two tiles of 3-5 (4 + 3, 4 + 4, 5 + 4), here over two kc passes
  run({13, 600}, {600, 40}, {});
  run({14, 600}, {600, 40}, {});
  run({9, 600}, {600, 40}, {});
  // More rows than one A block in L2 (mc: 504-510 rows with a 2 MiB L2, fewer with a smaller L2),
  // with several kc passes accumulating into C: wide (AVX-512 keeps each A panel in L1 while a B
  // block streams past, over two B blocks) and narrow (each B panel serves an A block's panels,
  // over two or more A blocks, one B block packed once a pass)
  run({530, 700}, {700, 600}, {});
  cpu_blocks();
  run({1100, 530}, {530, 200}, {});
  cpu_blocks();
  // At least 512^3 multiply-adds with AVX-512: 12-row tiles (gemm_tall_rows), with a partial last
  // tile, several A blocks, row-major f32 A through the 8x8 transposes (and their scalar k tail),
  // column-major f16 A and row-major bf16 A widened while packing
  run({1031, 131}, {131, 1000}, {});
  cpu_blocks();
  run({700, 203}, {700, 997}, {true, false}, L::contiguous, L::strided, DType::f16, DType::f32);
  cpu_blocks();
  run({203, 700}, {700, 997}, {}, L::contiguous, L::contiguous, DType::bf16, DType::f32);
  cpu_blocks();
  // the same two dtype pairs at a size every device runs
  run({23, 70}, {70, 37}, {}, L::contiguous, L::contiguous, DType::bf16, DType::f32);
  run({70, 23}, {70, 37}, {true, false}, L::contiguous, L::strided, DType::f16, DType::f32);
  // Vulkan's matmul_rows.comp (row-contiguous f32, N a multiple of 4): each row count it picks (1,
  // 2, 4, 8, 16 rows per workgroup) with M past it, one and two vec4 columns per invocation with N
  // past a workgroup's columns, and broadcast batches
  run({1, 300}, {300, 64}, {});
  run({3, 19}, {19, 12}, {});
  run({37, 29}, {29, 1028}, {});
  run({2, 1, 21, 19}, {1, 3, 19, 8}, {});
  // transpose flags and transposed / strided views
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Shape as = ta ? Shape{33, 31} : Shape{31, 33};
      Shape bs = tb ? Shape{7, 33} : Shape{33, 7};
      run(as, bs, {ta, tb});
      run(as, bs, {ta, tb}, L::transposed, L::strided);
    }
  }
  run({64, 96}, {96, 80}, {}, L::strided, L::transposed);
  // a weight stored [N, K] (trans_b) and trans_a with N in whole vec4s: Vulkan runs one row of A as
  // the gemv over the weight's rows, more rows after copying the transposed operand contiguous
  run({1, 300}, {64, 300}, {false, true});
  run({5, 33}, {12, 33}, {false, true});
  run({33, 5}, {12, 33}, {true, true});
  // batched with broadcast batch dims
  run({2, 3, 17, 9}, {9, 5}, {});
  run({2, 1, 7, 9}, {1, 4, 9, 6}, {});
  // three to six batch dims, broadcast both ways (size-1 dims in either operand, and operands of
  // different ranks), with dims that merge and dims that cannot
  run({2, 1, 3, 5, 4}, {1, 2, 1, 4, 6}, {});
  run({3, 1, 2, 1, 6, 7}, {2, 1, 2, 7, 5}, {});
  run({2, 2, 1, 2, 1, 3, 4, 3}, {1, 2, 3, 1, 2, 1, 4, 5}, {true, false});
  run({1, 2, 3, 2, 9, 4}, {2, 1, 1, 3, 2, 5, 4}, {false, true}, L::contiguous, L::transposed);
  run({2, 3, 2, 3, 17, 8}, {8, 20}, {}, L::strided, L::contiguous, DType::f16, DType::f16);
  run({4, 31, 33}, {4, 33, 32}, {false, false}, L::transposed, L::contiguous);
  run({5, 33, 31}, {5, 7, 33}, {true, true});
  // f16 / bf16 inputs, f32 result
  run({31, 64}, {64, 33}, {}, L::contiguous, L::contiguous, DType::f16, DType::f16);
  run({31, 64}, {64, 33}, {}, L::contiguous, L::transposed, DType::bf16, DType::bf16);
  run({2, 7, 65}, {65, 9}, {}, L::contiguous, L::contiguous, DType::f16, DType::f32);
  run({128, 256}, {256, 96}, {}, L::contiguous, L::contiguous, DType::bf16, DType::f16);
  // out_dtype: 16-bit inputs to f32 (logits; a decode row on the gemv path too), f32 inputs to a
  // 16-bit result, mixed 16-bit inputs to a 16-bit one, and a batched tensor-core shape to f32
  auto to = [](DType d, bool ta = false, bool tb = false) {
    MatmulParams p{ta, tb};
    p.out_dtype = d;
    return p;
  };
  run({31, 64}, {64, 33}, to(DType::f32), L::contiguous, L::contiguous, DType::f16, DType::f16);
  run({1, 96}, {40, 96}, to(DType::f32, false, true), L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({29, 40}, {40, 36}, to(DType::bf16), L::contiguous, L::contiguous, DType::f32, DType::f32);
  run({19, 33}, {33, 21}, to(DType::f16), L::contiguous, L::transposed, DType::f16, DType::bf16);
  run({2, 64, 32}, {2, 32, 48}, to(DType::f32), L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({3, 0}, {0, 4}, to(DType::f16));
  // 16-bit pairs laid out for the GPUs' tensor cores (row-major, rows a multiple of 8 elements),
  // writing their own dtype (cuda's matmul_mma _c16) and f32, with partial tiles and a batch
  run({70, 64}, {64, 72}, {}, L::contiguous, L::contiguous, DType::f16, DType::f16);
  run({2, 33, 40}, {40, 24}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({70, 64}, {64, 72}, to(DType::f32), L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  // 16-bit operands widened to f32 while packing: row-major A past one 256-k chunk, column-major A
  run({19, 300}, {300, 40}, {}, L::contiguous, L::contiguous, DType::f16, DType::bf16);
  run({64, 31}, {64, 33}, {true, false}, L::contiguous, L::contiguous, DType::f16, DType::f16);
  // bf16 x bf16 (the cpu's AVX512-BF16 kernel where the CPU has it): odd K, partial tiles of 12 x
  // 32, transposes, strided views, broadcast batches, two KC passes (K > 1024) and two A blocks
  run({7, 17}, {17, 33}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({1, 129}, {129, 2}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({33, 64}, {300, 64}, {false, true}, L::strided, L::contiguous, DType::bf16, DType::bf16);
  run({65, 31}, {65, 40}, {true, false}, L::contiguous, L::transposed, DType::bf16, DType::bf16);
  run({2, 3, 13, 7}, {7, 29}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({40, 1100}, {1100, 70}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({300, 64}, {64, 45}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  // a weight stored [N, K] (trans_b): pairs of k packed as words, odd K, two KC passes, a partial panel
  run({13, 37}, {45, 37}, {false, true}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  run({40, 1101}, {70, 1101}, {false, true}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  // AMX (32 x 32 blocks, k in steps of 32): two threads, three KC passes, partial blocks both ways
  run({129, 1500}, {1500, 97}, {}, L::contiguous, L::contiguous, DType::bf16, DType::bf16);
  cpu_blocks();
  // More than two batch dims (ranks 5 to 8, the most a Shape holds), broadcast both ways: rank 5
  // with rank 4 (matmul_rows.comp on Vulkan), rank 6 with N = 3 (matmul.comp), rank 7 with a
  // transposed f16 A, rank 8 with six batch dims, and rank 8 with a plain matrix.
  const std::size_t high_ranks = out.size();
  run({2, 3, 1, 4, 6}, {3, 2, 6, 8}, {});
  run({2, 1, 3, 1, 5, 7}, {1, 2, 1, 4, 7, 3}, {});
  run({2, 1, 3, 1, 2, 9, 5}, {1, 2, 1, 2, 1, 9, 6}, {true, false}, L::contiguous, L::transposed, DType::f16,
      DType::f32);
  run({2, 1, 2, 1, 3, 1, 5, 7}, {1, 2, 1, 2, 1, 3, 7, 4}, {});
  run({2, 2, 1, 2, 1, 2, 3, 5}, {5, 8}, {});
  for (std::size_t i = high_ranks; i < out.size(); ++i) {
    const int rank = std::max(out[i].inputs[0].shape.rank(), out[i].inputs[1].shape.rank());
    out[i].note += (out[i].note.empty() ? "rank " : " rank ") + std::to_string(rank);
  }
  // K == 0: an empty sum is zero
  run({3, 0}, {0, 4}, {});
  run({0, 5}, {5, 4}, {});
}

void gemv_cases(std::vector<Sample>& out) {
  for (auto m : k_sizes) {
    for (i64 k : {1, 7, 33, 1000}) {
      for (bool trans : {false, true}) {
        out.push_back({{in(trans ? Shape{k, m} : Shape{m, k}), in({k})}, GemvParams{trans}, trans ? "trans" : ""});
      }
    }
  }
  out.push_back({{view({127, 255}, L::transposed), view({255}, L::strided)}, GemvParams{false}, "transposed view"});
  out.push_back({{in({2048, 4096}), in({4096})}, GemvParams{false}, "large"});
  // out_dtype: 16-bit weights against an f32 vector to a 16-bit y, 16-bit pairs to an f32 y, f32 to
  // 16-bit, transposed
  auto to = [](DType d, bool trans = false) {
    GemvParams p{trans};
    p.out_dtype = d;
    return p;
  };
  auto typed = [](Shape s, DType d) { return in(std::move(s), -1, 1, L::contiguous, d); };
  out.push_back({{typed({67, 130}, DType::f16), in({130})}, to(DType::f16), "f16 A, out f16"});
  out.push_back({{typed({67, 130}, DType::bf16), typed({130}, DType::bf16)}, to(DType::f32), "bf16, out f32"});
  out.push_back({{typed({66, 131}, DType::f16), typed({131}, DType::f16)}, to(DType::bf16), "f16, out bf16"});
  out.push_back({{in({40, 33}), in({40})}, to(DType::f16, true), "trans, out f16"});
  // K == 0: an empty sum is zero
  out.push_back({{in({5, 0}), in({0})}, GemvParams{false}, "K = 0"});
  out.push_back({{in({0, 5}), in({0})}, GemvParams{true}, "K = 0, trans"});
  // few long rows: K is split over the threads in blocks (row-major, column-major, strided A)
  for (Layout l : {L::contiguous, L::transposed, L::strided}) {
    for (bool trans : {false, true}) {
      out.push_back({{view(trans ? Shape{20011, 5} : Shape{5, 20011}, l), in({20011})},
                     GemvParams{trans},
                     std::string("few long rows ") + layout_name(l)});
    }
  }
}

void dot_cases(std::vector<Sample>& out) {
  for (auto n : k_sizes) out.push_back({{in({n}), in({n})}, NoParams{}, ""});
  out.push_back({{view({1000}, L::strided), in({1000})}, NoParams{}, "strided"});
  out.push_back({{in({1 << 20}), in({1 << 20})}, NoParams{}, "large"});
}

}  // namespace trine::samples::build
