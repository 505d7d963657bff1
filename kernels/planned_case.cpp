// The backend-independent half of a Case: tensor plans, seeded inputs, pass sequencing.
#include "kernels/detail/planned_case.hpp"

#include <cmath>
#include <cstring>

#include "kernels/detail/cpu_parallel.hpp"

namespace kernelwatch::kernels::detail {

std::vector<TensorPlan> plan_tensors(const CaseId& id, const CaseSpec& spec) {
  const ElementType t = spec.dtype == DType::Bf16 ? ElementType::Bf16 : ElementType::Fp32;
  const std::int64_t m = spec.rows;
  const std::int64_t n = spec.cols;
  const bool forward = id.pass != Pass::Backward;
  const bool backward = id.pass != Pass::Forward;
  // What the forward writes: outputs when timed, saved state (or scratch) for a backward pass.
  const Role saved = forward ? Role::Output : Role::State;
  const Role unused = forward ? Role::Output : Role::Scratch;
  std::vector<TensorPlan> plan;
  if (id.kernel == Kernel::LayerNorm) {
    plan.push_back({"x", t, m, n, Role::Input});
    plan.push_back({"weight", t, 1, n, Role::Input});
    plan.push_back({"bias", t, 1, n, Role::Input});
    if (backward) plan.push_back({"dy", t, m, n, Role::Input});
    plan.push_back({"y", t, m, n, unused});
    plan.push_back({"mean", ElementType::Fp32, m, 1, saved});
    plan.push_back({"rstd", ElementType::Fp32, m, 1, saved});
    if (backward) {
      plan.push_back({"dx", t, m, n, Role::Output});
      plan.push_back({"dweight", t, 1, n, Role::Output});
      plan.push_back({"dbias", t, 1, n, Role::Output});
    }
    return plan;
  }
  const bool none = spec.reduction == Reduction::None;
  plan.push_back({"p", t, m, n, Role::Input});
  plan.push_back({"q", t, m, n, Role::Input});
  if (spec.ignored != IgnoredRows::None)
    plan.push_back({"labels", ElementType::Int64, m, 1, Role::Input});
  if (backward) {
    plan.push_back({"grad_output", ElementType::Fp32, none ? m : 1, none ? n : 1, Role::Input});
  }
  plan.push_back({"loss", ElementType::Fp32, none ? m : 1, none ? n : 1, unused});
  plan.push_back({"grad", t, m, n, saved});
  if (backward) plan.push_back({"dp", t, m, n, Role::Output});
  return plan;
}

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A counter-based uniform in [0, 1): the value of element `index` of stream `stream` never
// depends on how the filling is split across threads.
double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h = mix(mix(seed ^ mix(stream)) + index);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

enum Stream : std::uint64_t {
  kX = 1,
  kWeight,
  kBias,
  kDy,
  kP,
  kQ,
  kLabels,
  kGradOutput,
  kEqual,
};

void put(void* dst, ElementType type, std::int64_t i, double value) {
  if (type == ElementType::Fp32) {
    static_cast<float*>(dst)[i] = static_cast<float>(value);
  } else {
    static_cast<Bf16*>(dst)[i] = to_bf16(static_cast<float>(value));
  }
}

// Probability rows: softmax of logits in [-4, 4). In q, about one element in eight equals p's
// exactly (after rounding to the dtype), so the p == q branch of the gradient is exercised.
void fill_tvd_row(std::uint64_t seed, std::int64_t row, std::int64_t vocab, bool is_q,
                  ElementType type, void* dst) {
  const auto logit = [&](Stream stream, std::int64_t i) {
    return 8.0 * uniform(seed, stream, static_cast<std::uint64_t>(row * vocab + i)) - 4.0;
  };
  double sum_p = 0.0;
  double sum_q = 0.0;
  for (std::int64_t i = 0; i < vocab; ++i) {
    sum_p += std::exp(logit(kP, i));
    if (is_q) sum_q += std::exp(logit(kQ, i));
  }
  for (std::int64_t i = 0; i < vocab; ++i) {
    const std::int64_t at = row * vocab + i;
    const double p = std::exp(logit(kP, i)) / sum_p;
    double value = p;
    if (is_q && uniform(seed, kEqual, static_cast<std::uint64_t>(at)) >= 0.125) {
      value = std::exp(logit(kQ, i)) / sum_q;
    }
    put(dst, type, at, value);
  }
}

}  // namespace

void fill_input(const CaseSpec& spec, const TensorPlan& plan, std::uint64_t seed, void* host) {
  const std::string& name = plan.name;
  if (name == "p" || name == "q") {
    const bool is_q = name == "q";
    parallel_blocks(plan.rows, std::max<std::int64_t>(1, 65536 / plan.cols),
                    [&](std::int64_t begin, std::int64_t end) {
                      for (std::int64_t r = begin; r < end; ++r) {
                        fill_tvd_row(seed, r, plan.cols, is_q, plan.type, host);
                      }
                    });
    return;
  }
  if (name == "labels") {
    auto* labels = static_cast<std::int64_t*>(host);
    for (std::int64_t r = 0; r < plan.rows; ++r) {
      const bool ignored =
          spec.ignored == IgnoredRows::All || (spec.ignored == IgnoredRows::Some && r % 4 == 1);
      const auto label = static_cast<std::int64_t>(
          uniform(seed, kLabels, static_cast<std::uint64_t>(r)) * static_cast<double>(spec.cols));
      labels[r] = ignored ? spec.ignore_index : label;
    }
    return;
  }
  // Elementwise inputs: value = offset + width * u.
  Stream stream = kX;
  double offset = 0.0;
  double width = 1.0;
  if (name == "x") {
    stream = kX, offset = -0.5, width = 4.0;  // mean far from 0: exercises the centring
  } else if (name == "weight") {
    stream = kWeight, offset = 0.5, width = 1.0;
  } else if (name == "bias") {
    stream = kBias, offset = -0.5, width = 1.0;
  } else if (name == "dy") {
    stream = kDy, offset = -1.0, width = 2.0;
  } else if (name == "grad_output") {
    stream = kGradOutput, offset = 0.5, width = 1.0;
  } else {
    KW_ASSERT(false, "fill_input: not an input tensor");
  }
  parallel_blocks(plan.rows * plan.cols, 65536, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      put(host, plan.type, i,
          offset + width * uniform(seed, stream, static_cast<std::uint64_t>(i)));
    }
  });
}

PlannedCase::PlannedCase(const CaseId& id, const CaseSpec& spec)
    : Case(id, spec), plan_(plan_tensors(id, spec)) {}

TensorRef PlannedCase::ref(const std::string& name) const {
  for (const auto& tensor : plan_) {
    if (tensor.name == name) return TensorRef{data(name), tensor.type, tensor.rows, tensor.cols};
  }
  return TensorRef{};
}

core::Status PlannedCase::prepare(std::uint64_t seed) {
  for (const auto& tensor : plan_) {
    if (tensor.role != Role::Input) continue;
    if (void* host = host_data(tensor.name)) {
      fill_input(spec(), tensor, seed, host);
      continue;
    }
    std::vector<std::byte> staging;
    try {
      staging.resize(tensor.bytes());
    } catch (const std::bad_alloc&) {
      return core::fail(core::ErrorCode::OutOfMemory, "staging " + std::to_string(tensor.bytes()) +
                                                          " host bytes for input " + tensor.name);
    }
    fill_input(spec(), tensor, seed, staging.data());
    KW_TRY(upload(tensor, staging.data()));
  }
  if (id().pass == Pass::Backward) {
    KW_TRY(run_forward());
    return synchronize();
  }
  return {};
}

core::Status PlannedCase::run_forward() {
  if (id().kernel == Kernel::LayerNorm) {
    return layer_norm_forward(LayerNormForward{ref("x"), ref("weight"), ref("bias"), ref("y"),
                                               ref("mean"), ref("rstd"), spec().eps});
  }
  return tvd_forward(TvdForward{ref("p"), ref("q"), ref("labels"), ref("loss"), ref("grad"),
                                spec().reduction, spec().ignore_index});
}

core::Status PlannedCase::run_backward() {
  if (id().kernel == Kernel::LayerNorm) {
    return layer_norm_backward(LayerNormBackward{ref("dy"), ref("x"), ref("weight"), ref("mean"),
                                                 ref("rstd"), ref("dx"), ref("dweight"),
                                                 ref("dbias")});
  }
  return tvd_backward(TvdBackward{ref("grad"), ref("grad_output"), ref("dp")});
}

core::Status PlannedCase::launch() {
  switch (id().pass) {
    case Pass::Forward:
      return run_forward();
    case Pass::Backward:
      return run_backward();
    case Pass::Full:
      KW_TRY(run_forward());
      return run_backward();
  }
  return {};
}

core::Status PlannedCase::poison_outputs() {
  for (const auto& tensor : plan_) {
    if (tensor.role != Role::Output) continue;
    // 0xff.. is a NaN in fp32 and in bf16.
    KW_TRY(fill_bytes(tensor, 0xff));
  }
  return synchronize();
}

core::Result<std::vector<HostTensor>> PlannedCase::copy_out(bool outputs) {
  KW_TRY(synchronize());
  std::vector<HostTensor> result;
  for (const auto& tensor : plan_) {
    const bool wanted = outputs ? tensor.role == Role::Output
                                : (tensor.role == Role::Input || tensor.role == Role::State);
    if (!wanted) continue;
    HostTensor host{tensor.name, tensor.type, tensor.rows, tensor.cols, {}};
    try {
      host.bytes.resize(tensor.bytes());
    } catch (const std::bad_alloc&) {
      return core::fail(core::ErrorCode::OutOfMemory, "copying " + std::to_string(tensor.bytes()) +
                                                          " bytes of " + tensor.name +
                                                          " to the host");
    }
    KW_TRY(download(tensor, host.bytes.data()));
    result.push_back(std::move(host));
  }
  return result;
}

core::Result<std::vector<HostTensor>> PlannedCase::inputs() {
  return copy_out(false);
}
core::Result<std::vector<HostTensor>> PlannedCase::outputs() {
  return copy_out(true);
}

}  // namespace kernelwatch::kernels::detail
