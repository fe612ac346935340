// Proves the installed package works: a matmul and a softmax through trine::trine.
#include <cmath>
#include <cstdio>

#include <trine/trine.hpp>

int main() {
  auto a = trine::Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = trine::Tensor::from(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
  auto c = trine::matmul(a, b).to_vector();  // [[4, 5], [10, 11]]
  auto s = trine::softmax(trine::Tensor::zeros({1, 4})).to_vector();
  bool ok = c == std::vector<float>{4, 5, 10, 11} && std::abs(s[0] - 0.25f) < 1e-7f;
  std::printf("consumer: trine %s, matmul %s\n", trine::version(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
