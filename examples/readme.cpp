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

  // Async: returns at once; a Future can feed further ops without waiting.
  trine::Future<trine::Tensor> m = trine::async::matmul(x, w);
  trine::Future<trine::Tensor> r = trine::async::relu(m);
  std::printf("async relu(matmul) gave %s\n", r.get().str().c_str());  // get() waits (and throws errors)

  // A batch: one upload, three ops, one readback, as one submission; run() again with new data.
  trine::Batch batch;
  trine::Tensor in = batch.upload(host, {64, 128});
  trine::BatchRead out = batch.read(trine::rmsnorm(trine::add(trine::silu(in), in)));
  batch.run();
  std::printf("batch gave %zu values, first %f\n", out.get().size(), out.get()[0]);
  // Where ops run: tensors made without a device are placed by the cost model (the cpu here unless
  // software devices are opted in); a named device, x.to(device) or a DeviceScope pins them.
  trine::dispatch::Decision d = trine::dispatch::decide(trine::OpKind::matmul, std::vector<trine::Tensor>{x, w},
                                                          trine::MatmulParams{});
  std::printf("matmul would run on %s (%s)\n", d.device.str().c_str(), d.why.c_str());
  {
    trine::DeviceScope pin(trine::Device::cpu());
    std::printf("pinned: %s\n", trine::relu(x).str().c_str());
  }
}
