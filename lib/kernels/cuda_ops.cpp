// Tensors in, pointers out: the autograd Functions that run the kernels of
// bias_gelu.cu and layernorm.cu on the current stream, and the embeddings'
// forward of embedding_layernorm.cu.
#include "kernels/cuda_ops.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>

#include "kernels/launch.h"

namespace hpcbench::kernels::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

launch::DType dtype_of(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat ? launch::DType::f32 : launch::DType::bf16;
}
const void* ptr(const at::Tensor& t) { return t.defined() ? t.const_data_ptr() : nullptr; }
void* mut(const at::Tensor& t) { return t.defined() ? t.mutable_data_ptr() : nullptr; }
at::Tensor contiguous(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }
cudaStream_t stream() { return at::cuda::getCurrentCUDAStream().stream(); }
// The incoming gradient, contiguous and in the forward's dtype.
at::Tensor grad_like(const at::Tensor& g, const at::Tensor& like) {
  return g.to(like.scalar_type()).contiguous();
}

// The dropout's seed and offset, the way ATen's own dropout takes them
// (native/cuda/Dropout.cu): from the device's default CUDA generator, under
// its lock, advancing its offset by what this call consumes. While a CUDA
// graph is being captured philox_cuda_state hands out device pointers (the
// seed and an offset the graph's replay advances) instead of values, and the
// kernel reads them when it runs, so each replay draws a new mask.
launch::Philox philox_for(const at::Tensor& x) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      std::nullopt, at::cuda::detail::getDefaultCUDAGenerator(x.get_device()));
  at::PhiloxCudaState st;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    st = gen->philox_cuda_state(launch::kPhiloxIncrement);
  }
  launch::Philox p;
  p.captured = st.captured_;
  if (st.captured_) {
    p.seed_ptr = st.seed_.ptr;
    p.offset_ptr = st.offset_.ptr;
    p.offset_intragraph = st.offset_intragraph_;
  } else {
    p.seed = st.seed_.val;
    p.offset = st.offset_.val;
  }
  return p;
}

struct BiasGelu : torch::autograd::Function<BiasGelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& bias_in) {
    c10::cuda::CUDAGuard guard(x_in.device());
    at::Tensor x = x_in.contiguous(), bias = contiguous(bias_in);
    at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
    const int64_t n = x.size(-1), rows = n == 0 ? 0 : x.numel() / n;
    C10_CUDA_CHECK(launch::bias_gelu_forward(dtype_of(x), x.const_data_ptr(), ptr(bias), y.mutable_data_ptr(), rows,
                                             n, stream()));
    // x, not x + bias: the backward recomputes the sum rather than keeping a
    // second activation-sized tensor (the unfused path keeps only one too).
    ctx->save_for_backward({x, bias});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& bias = saved[1];
    c10::cuda::CUDAGuard guard(x.device());
    at::Tensor dy = grad_like(grads[0], x);
    at::Tensor dx = at::empty_like(x, at::MemoryFormat::Contiguous);
    const int64_t n = x.size(-1), rows = n == 0 ? 0 : x.numel() / n;
    at::Tensor dbias, scratch;
    if (bias.defined() && ctx->needs_input_grad(1)) {
      dbias = at::empty_like(bias);
      scratch = at::empty({launch::bias_gelu_partial_blocks(rows, n), n}, x.options().dtype(at::kFloat));
    }
    C10_CUDA_CHECK(launch::bias_gelu_backward(dtype_of(x), dy.const_data_ptr(), x.const_data_ptr(), ptr(bias),
                                              dx.mutable_data_ptr(), mut(dbias),
                                              scratch.defined() ? scratch.mutable_data_ptr<float>() : nullptr, rows,
                                              n, stream()));
    return {dx, dbias};
  }
};

struct BiasDropoutAddLayerNorm : torch::autograd::Function<BiasDropoutAddLayerNorm> {
  // Returns the output and the keep mask (empty without dropout: a Function's
  // outputs must be tensors).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& bias_in,
                               const at::Tensor& residual_in, const at::Tensor& weight_in,
                               const at::Tensor& ln_bias_in, double p, double eps, bool training) {
    c10::cuda::CUDAGuard guard(x_in.device());
    at::Tensor x = x_in.contiguous(), residual = residual_in.contiguous();
    at::Tensor bias = contiguous(bias_in), weight = contiguous(weight_in), ln_bias = contiguous(ln_bias_in);
    const int64_t n = x.size(-1), rows = n == 0 ? 0 : x.numel() / n;
    const bool dropout = training && p > 0;
    at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
    at::Tensor z = at::empty_like(x, at::MemoryFormat::Contiguous);
    at::Tensor mean = at::empty({rows}, x.options().dtype(at::kFloat));
    at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    at::Tensor keep = dropout ? at::empty(x.sizes(), x.options().dtype(at::kBool)) : at::empty({0}, x.options().dtype(at::kBool));
    launch::Philox philox = dropout ? philox_for(x) : launch::Philox{};
    C10_CUDA_CHECK(launch::layernorm_forward(dtype_of(x), x.const_data_ptr(), ptr(bias), residual.const_data_ptr(),
                                             ptr(weight), ptr(ln_bias), y.mutable_data_ptr(), z.mutable_data_ptr(),
                                             mean.mutable_data_ptr<float>(), rstd.mutable_data_ptr<float>(),
                                             dropout ? keep.mutable_data_ptr<bool>() : nullptr,
                                             static_cast<float>(p), static_cast<float>(eps), philox, rows, n,
                                             stream()));
    ctx->mark_non_differentiable({keep});
    // What the unfused modules keep (LayerNorm's input, mean and rstd; the
    // dropout mask), not x or the residual.
    ctx->save_for_backward({z, mean, rstd, keep, weight});
    ctx->saved_data["p"] = dropout ? p : 0.0;
    ctx->saved_data["bias"] = bias.defined();
    ctx->saved_data["ln_bias"] = ln_bias.defined();
    return {y, keep};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& z = saved[0];
    const at::Tensor& mean = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor& keep = saved[3];
    const at::Tensor& weight = saved[4];
    const double p = ctx->saved_data["p"].toDouble();
    c10::cuda::CUDAGuard guard(z.device());
    at::Tensor dy = grad_like(grads[0], z);
    const int64_t n = z.size(-1), rows = n == 0 ? 0 : z.numel() / n;
    // Without dropout x's gradient equals the residual's: one tensor, written
    // once, is returned for both (as autograd's add backward returns its
    // gradient for both operands, which the composite does).
    at::Tensor dresidual = at::empty_like(z, at::MemoryFormat::Contiguous);
    at::Tensor dx = p > 0 ? at::empty_like(z, at::MemoryFormat::Contiguous) : dresidual;
    auto param_grad = [&](bool present, size_t input) {
      return present && ctx->needs_input_grad(input) ? at::empty({n}, z.options()) : at::Tensor();
    };
    at::Tensor dbias = param_grad(ctx->saved_data["bias"].toBool(), 1);
    at::Tensor dweight = param_grad(weight.defined(), 3);
    at::Tensor dln_bias = param_grad(ctx->saved_data["ln_bias"].toBool(), 4);
    at::Tensor scratch = at::empty({launch::layernorm_partial_blocks(rows, n), 3, n}, z.options().dtype(at::kFloat));
    C10_CUDA_CHECK(launch::layernorm_backward(
        dtype_of(z), dy.const_data_ptr(), z.const_data_ptr(), mean.const_data_ptr<float>(),
        rstd.const_data_ptr<float>(), p > 0 ? keep.const_data_ptr<bool>() : nullptr, static_cast<float>(p),
        ptr(weight), p > 0 ? dx.mutable_data_ptr() : nullptr, dresidual.mutable_data_ptr(), mut(dbias), mut(dweight), mut(dln_bias),
        scratch.mutable_data_ptr<float>(), rows, n, stream()));
    return {dx, dbias, dresidual, dweight, dln_bias, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool device_supported(const at::Tensor& t) {
  return at::cuda::getDeviceProperties(t.get_device())->major >= 8;
}

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias) { return BiasGelu::apply(x, bias); }

MaskedOutput bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                        const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                        bool training) {
  auto out = BiasDropoutAddLayerNorm::apply(x, bias, residual, weight, ln_bias, p, eps, training);
  return {out[0], training && p > 0 ? out[1] : at::Tensor()};
}

EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids_in, const at::Tensor& types_in,
                                          const at::Tensor& word_w, const at::Tensor& type_w, const at::Tensor& pos_w,
                                          const at::Tensor& ln_w, const at::Tensor& ln_b, double eps) {
  c10::cuda::CUDAGuard guard(word_w.device());
  at::Tensor ids = ids_in.contiguous(), types = types_in.contiguous();
  at::Tensor word = word_w.contiguous(), type = type_w.contiguous(), pos = pos_w.contiguous();
  at::Tensor w = ln_w.contiguous(), b = ln_b.contiguous();
  const int64_t batch = ids.size(0), seq = ids.size(1), n = word.size(1);
  at::Tensor y = at::empty({batch, seq, n}, word.options());
  // [batch, seq, 1], the shape at::native_layer_norm gives its statistics,
  // which at::native_layer_norm_backward then takes.
  at::Tensor mean = at::empty({batch, seq, 1}, word.options().dtype(at::kFloat));
  at::Tensor rstd = at::empty({batch, seq, 1}, word.options().dtype(at::kFloat));
  C10_CUDA_CHECK(launch::embedding_layernorm_forward(
      dtype_of(word), ids.const_data_ptr<int64_t>(), types.const_data_ptr<int64_t>(), word.const_data_ptr(),
      type.const_data_ptr(), pos.const_data_ptr(), w.const_data_ptr(), b.const_data_ptr(), y.mutable_data_ptr(),
      mean.mutable_data_ptr<float>(), rstd.mutable_data_ptr<float>(), static_cast<float>(eps), batch * seq, seq, n,
      word.size(0), type.size(0), stream()));
  return {y, mean, rstd};
}

}  // namespace hpcbench::kernels::cuda
