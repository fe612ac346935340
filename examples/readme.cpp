// The README's example, compiled and run by the tests (tests/readme_sync.cmake keeps them equal).
#include <cstdio>
#include <trine/trine.hpp>

int main() {
  auto x = trine::Tensor::random({64, 256}, /*seed=*/1);  // f32, on the cpu
  auto w = trine::Tensor::random({256, 128}, /*seed=*/2);
  auto b = trine::Tensor::zeros({128});
  auto h = trine::bias_act(trine::matmul(x, w), b, trine::Activation::gelu);
  auto p = trine::softmax(h, /*axis=*/-1);
  auto y = trine::conv2d(trine::Tensor::random({1, 3, 32, 32}, 3), trine::Tensor::random({8, 3, 3, 3}, 4),
                         {.stride = 1, .padding = 1});
  std::vector<float> host = p.to_vector();  // row-major f32
  std::printf("softmax row sums to %f; conv2d gave %s\n", trine::sum(p, -1).to_vector()[0], y.str().c_str());
}
