// fused_elementwise programs: the opcode table (one row per fusable op), decoding/validation,
// and the epilogue activations derived from it.
#include "tern/ops/fused_program.h"

#include <algorithm>
#include <cmath>

#include "tern/ops/fused_scalar.h"
#include "tern/tensor/dtype.h"

namespace tern::ops {

namespace {

// The row's formula, instantiated for float and double from one generic lambda.
template <auto F>
constexpr ScalarFn scalar() {
  return {+[](float a, float b) { return static_cast<float>(F(a, b)); },
          +[](double a, double b) { return static_cast<double>(F(a, b)); }};
}

// NaN propagates; otherwise the larger (smaller) of the two.
constexpr auto kMaximum = [](auto a, auto b) { return a != a ? a : b != b ? b : a < b ? b : a; };
constexpr auto kMinimum = [](auto a, auto b) { return a != a ? a : b != b ? b : b < a ? b : a; };
constexpr auto kSign = [](auto a, auto) {
  using C = decltype(a);
  return a > C(0) ? C(1) : a < C(0) ? C(-1) : a == a ? C(0) : a;  // zero, or NaN kept
};
// Through f32 (the only compute type whose values bf16 rounds: f64 programs round their double).
constexpr auto kRoundBF16 = [](auto a, auto) {
  return decltype(a)(bfloat16::round(static_cast<float>(a)));
};
constexpr auto kSoftplus = [](auto a, auto) {
  using C = decltype(a);
  return (a > C(0) ? a : C(0)) + std::log1p(std::exp(-std::fabs(a)));
};

}  // namespace

const std::vector<FusedOpcodeInfo>& fused_opcodes() {
  using C = FusedOpcode;
  using A = Activation;
  // clang-format off
  static const std::vector<FusedOpcodeInfo> table = {
      {C::kImm, "imm", 0, "", std::nullopt, scalar<[](auto a, auto) { return decltype(a)(0); }>()},
      {C::kNeg, "neg", 1, "neg", std::nullopt, scalar<[](auto a, auto) { return -a; }>(), true},
      {C::kAbs, "abs", 1, "abs", std::nullopt, scalar<[](auto a, auto) { return std::abs(a); }>()},
      {C::kExp, "exp", 1, "exp", std::nullopt, scalar<[](auto a, auto) { return std::exp(a); }>()},
      {C::kLog, "log", 1, "log", std::nullopt, scalar<[](auto a, auto) { return std::log(a); }>()},
      {C::kLog1p, "log1p", 1, "log1p", std::nullopt,
       scalar<[](auto a, auto) { return std::log1p(a); }>()},
      {C::kSqrt, "sqrt", 1, "sqrt", std::nullopt,
       scalar<[](auto a, auto) { return std::sqrt(a); }>()},
      {C::kRsqrt, "rsqrt", 1, "rsqrt", std::nullopt,
       scalar<[](auto a, auto) { return decltype(a)(1) / std::sqrt(a); }>()},
      {C::kSquare, "square", 1, "square", std::nullopt, scalar<[](auto a, auto) { return a * a; }>()},
      {C::kTanh, "tanh", 1, "tanh", std::nullopt,
       scalar<[](auto a, auto) { return std::tanh(a); }>(), false, A::kTanh},
      {C::kSigmoid, "sigmoid", 1, "sigmoid", std::nullopt,
       scalar<[](auto a, auto) { return sigmoid_scalar(a); }>(), false, A::kSigmoid},
      {C::kRelu, "relu", 1, "relu", std::nullopt,
       scalar<[](auto a, auto) { return relu_scalar(a); }>(), true, A::kRelu},
      {C::kSoftplus, "softplus", 1, "softplus", std::nullopt, scalar<kSoftplus>()},
      {C::kSin, "sin", 1, "sin", std::nullopt, scalar<[](auto a, auto) { return std::sin(a); }>()},
      {C::kCos, "cos", 1, "cos", std::nullopt, scalar<[](auto a, auto) { return std::cos(a); }>()},
      {C::kSign, "sign", 1, "sign", std::nullopt, scalar<kSign>()},
      {C::kGeluTanh, "gelu_tanh", 1, "gelu", true,
       scalar<[](auto a, auto) { return gelu_tanh_scalar(a); }>(), true, A::kGeluTanh},
      {C::kGeluErf, "gelu_erf", 1, "gelu", false,
       scalar<[](auto a, auto) { return gelu_erf_scalar(a); }>(), true, A::kGeluErf},
      {C::kRoundBF16, "round_bf16", 1, "", std::nullopt, scalar<kRoundBF16>()},
      {C::kAdd, "add", 2, "add", std::nullopt, scalar<[](auto a, auto b) { return a + b; }>(), true},
      {C::kSub, "sub", 2, "sub", std::nullopt, scalar<[](auto a, auto b) { return a - b; }>(), true},
      {C::kMul, "mul", 2, "mul", std::nullopt, scalar<[](auto a, auto b) { return a * b; }>(), true},
      {C::kDiv, "div", 2, "div", std::nullopt, scalar<[](auto a, auto b) { return a / b; }>()},
      {C::kPow, "pow", 2, "pow", std::nullopt,
       scalar<[](auto a, auto b) { return std::pow(a, b); }>()},
      {C::kMaximum, "maximum", 2, "maximum", std::nullopt, scalar<kMaximum>()},
      {C::kMinimum, "minimum", 2, "minimum", std::nullopt, scalar<kMinimum>()},
      {C::kReluGrad, "relu_grad", 2, "relu_grad", std::nullopt,  // (dy, x)
       scalar<[](auto a, auto b) { return (b > decltype(b)(0)) ? a : decltype(a)(0); }>(), true},
      {C::kSigmoidGrad, "sigmoid_grad", 2, "sigmoid_grad", std::nullopt,  // (dy, y)
       scalar<[](auto a, auto b) { return a * b * (decltype(b)(1) - b); }>()},
      {C::kTanhGrad, "tanh_grad", 2, "tanh_grad", std::nullopt,  // (dy, y)
       scalar<[](auto a, auto b) { return a * (decltype(b)(1) - b * b); }>()},
      {C::kGeluTanhGrad, "gelu_tanh_grad", 2, "gelu_grad", true,  // (dy, x)
       scalar<[](auto a, auto b) { return a * gelu_tanh_grad_scalar(b); }>(), true},
      {C::kGeluErfGrad, "gelu_erf_grad", 2, "gelu_grad", false,  // (dy, x)
       scalar<[](auto a, auto b) { return a * gelu_erf_grad_scalar(b); }>(), true},
  };
  // clang-format on
  return table;
}

const FusedOpcodeInfo* fused_opcode_info(int64_t code) {
  // Opcodes are small: index them once (the reference kernel asks per instruction).
  static const std::vector<const FusedOpcodeInfo*> by_code = [] {
    std::vector<const FusedOpcodeInfo*> index;
    for (const auto& info : fused_opcodes()) {
      size_t c = static_cast<size_t>(info.code);
      if (index.size() <= c) index.resize(c + 1, nullptr);
      index[c] = &info;
    }
    return index;
  }();
  if (code < 0 || static_cast<size_t>(code) >= by_code.size()) return nullptr;
  return by_code[static_cast<size_t>(code)];
}

std::optional<FusedOpcode> fused_opcode_for(std::string_view op, const Attrs& attrs) {
  for (const auto& info : fused_opcodes()) {
    if (info.op.empty() || info.op != op) continue;
    if (info.gelu_approximate) {
      const AttrValue* a = attrs.find("approximate");
      bool approximate = a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
      if (approximate != *info.gelu_approximate) continue;
    }
    return info.code;
  }
  return std::nullopt;
}

void FusedProgram::to_attrs(Attrs& attrs) const {
  std::vector<int64_t> opcodes, operands;
  std::vector<double> immediates;
  for (const auto& ins : code) {
    opcodes.push_back(static_cast<int64_t>(ins.op));
    operands.push_back(ins.a);
    operands.push_back(ins.b);
    immediates.push_back(ins.imm);
  }
  attrs.set("opcodes", std::move(opcodes));
  attrs.set("operands", std::move(operands));
  attrs.set("immediates", std::move(immediates));
}

std::string FusedProgram::to_string() const {
  std::vector<std::string> slot(static_cast<size_t>(num_slots()));
  for (int i = 0; i < num_inputs; ++i) slot[static_cast<size_t>(i)] = str_cat("in", i);
  for (size_t k = 0; k < code.size(); ++k) {
    const FusedInstruction& ins = code[k];
    const FusedOpcodeInfo* info = fused_opcode_info(static_cast<int64_t>(ins.op));
    std::string s;
    if (info->arity == 0) {
      s = str_cat(ins.imm);
    } else if (info->arity == 1) {
      s = str_cat(info->name, "(", slot[static_cast<size_t>(ins.a)], ")");
    } else {
      s = str_cat(info->name, "(", slot[static_cast<size_t>(ins.a)], ", ",
                  slot[static_cast<size_t>(ins.b)], ")");
    }
    slot[static_cast<size_t>(num_inputs) + k] = std::move(s);
  }
  return code.empty() ? "" : slot.back();
}

std::string decode_fused_program(const Attrs& attrs, int num_inputs, FusedProgram* out) {
  const AttrValue* op_attr = attrs.find("opcodes");
  const AttrValue* operand_attr = attrs.find("operands");
  const AttrValue* imm_attr = attrs.find("immediates");
  if (!op_attr || !operand_attr || !imm_attr)
    return "needs attributes opcodes, operands, immediates";
  const auto* opcodes = std::get_if<std::vector<int64_t>>(op_attr);
  const auto* operands = std::get_if<std::vector<int64_t>>(operand_attr);
  const auto* immediates = std::get_if<std::vector<double>>(imm_attr);
  if (!opcodes || !operands || !immediates)
    return "opcodes/operands must be ints, immediates floats";
  size_t k = opcodes->size();
  if (k == 0) return "the program is empty";
  if (operands->size() != 2 * k) {
    return str_cat("operands has ", operands->size(), " entries, expected 2 per instruction (",
                   2 * k, ")");
  }
  if (immediates->size() != k) {
    return str_cat("immediates has ", immediates->size(),
                   " entries, expected one per instruction (", k, ")");
  }
  FusedProgram p;
  p.num_inputs = num_inputs;
  for (size_t i = 0; i < k; ++i) {
    const FusedOpcodeInfo* info = fused_opcode_info((*opcodes)[i]);
    if (!info) return str_cat("instruction ", i, " has unknown opcode ", (*opcodes)[i]);
    FusedInstruction ins;
    ins.op = info->code;
    ins.imm = (*immediates)[i];
    int64_t slots_before = num_inputs + static_cast<int64_t>(i);
    for (int j = 0; j < 2; ++j) {
      int64_t s = (*operands)[2 * i + static_cast<size_t>(j)];
      bool used = j < info->arity;
      if (!used && s != -1) {
        return str_cat("operand ", j, " of instruction ", i, " (", info->name, ") must be -1, got ",
                       s);
      }
      if (used && (s < 0 || s >= slots_before)) {
        return str_cat("operand ", j, " of instruction ", i, " (", info->name, ") reads slot ", s,
                       "; only slots 0..", slots_before - 1, " are defined there");
      }
      (j == 0 ? ins.a : ins.b) = static_cast<int>(s);
    }
    if (info->arity != 0 && ins.imm != 0) {
      return str_cat("instruction ", i, " (", info->name,
                     ") has an immediate but only imm uses one");
    }
    p.code.push_back(ins);
  }
  *out = std::move(p);
  return "";
}

const std::vector<ActivationInfo>& activations() {
  static const std::vector<ActivationInfo> table = [] {
    std::vector<ActivationInfo> rows(kNumActivations);
    rows[0] = {Activation::kNone, "none", nullptr};
    for (const auto& info : fused_opcodes()) {
      if (info.epilogue)
        rows[static_cast<size_t>(*info.epilogue)] = {*info.epilogue, info.name, &info};
    }
    return rows;
  }();
  return table;
}

std::optional<Activation> parse_activation(std::string_view name) {
  for (const auto& a : activations()) {
    if (a.name == name) return a.activation;
  }
  return std::nullopt;
}

std::string activation_names() {
  std::string out;
  for (const auto& a : activations()) out += str_cat(out.empty() ? "" : ", ", a.name);
  return out;
}

std::optional<Activation> epilogue_activation_for(std::string_view op, const Attrs& attrs) {
  std::optional<FusedOpcode> code = fused_opcode_for(op, attrs);
  if (!code) return std::nullopt;
  return fused_opcode_info(*code).epilogue;
}

}  // namespace tern::ops
