// fused_elementwise programs: the opcode table, decoding/validation, and epilogue activations.
#include "tern/ops/fused_program.h"

#include <algorithm>

namespace tern::ops {

const std::vector<FusedOpcodeInfo>& fused_opcodes() {
  using C = FusedOpcode;
  static const std::vector<FusedOpcodeInfo> table = {
      {C::kImm, "imm", 0, "", std::nullopt},
      {C::kNeg, "neg", 1, "neg", std::nullopt},
      {C::kAbs, "abs", 1, "abs", std::nullopt},
      {C::kExp, "exp", 1, "exp", std::nullopt},
      {C::kLog, "log", 1, "log", std::nullopt},
      {C::kLog1p, "log1p", 1, "log1p", std::nullopt},
      {C::kSqrt, "sqrt", 1, "sqrt", std::nullopt},
      {C::kRsqrt, "rsqrt", 1, "rsqrt", std::nullopt},
      {C::kSquare, "square", 1, "square", std::nullopt},
      {C::kTanh, "tanh", 1, "tanh", std::nullopt},
      {C::kSigmoid, "sigmoid", 1, "sigmoid", std::nullopt},
      {C::kRelu, "relu", 1, "relu", std::nullopt},
      {C::kSoftplus, "softplus", 1, "softplus", std::nullopt},
      {C::kSin, "sin", 1, "sin", std::nullopt},
      {C::kCos, "cos", 1, "cos", std::nullopt},
      {C::kSign, "sign", 1, "sign", std::nullopt},
      {C::kGeluTanh, "gelu_tanh", 1, "gelu", true},
      {C::kGeluErf, "gelu_erf", 1, "gelu", false},
      {C::kAdd, "add", 2, "add", std::nullopt},
      {C::kSub, "sub", 2, "sub", std::nullopt},
      {C::kMul, "mul", 2, "mul", std::nullopt},
      {C::kDiv, "div", 2, "div", std::nullopt},
      {C::kPow, "pow", 2, "pow", std::nullopt},
      {C::kMaximum, "maximum", 2, "maximum", std::nullopt},
      {C::kMinimum, "minimum", 2, "minimum", std::nullopt},
      {C::kReluGrad, "relu_grad", 2, "relu_grad", std::nullopt},
      {C::kSigmoidGrad, "sigmoid_grad", 2, "sigmoid_grad", std::nullopt},
      {C::kTanhGrad, "tanh_grad", 2, "tanh_grad", std::nullopt},
      {C::kGeluTanhGrad, "gelu_tanh_grad", 2, "gelu_grad", true},
      {C::kGeluErfGrad, "gelu_erf_grad", 2, "gelu_grad", false},
  };
  return table;
}

const FusedOpcodeInfo* fused_opcode_info(int64_t code) {
  for (const auto& info : fused_opcodes()) {
    if (static_cast<int64_t>(info.code) == code) return &info;
  }
  return nullptr;
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

const std::vector<std::string>& epilogue_activations() {
  static const std::vector<std::string> names = {"none",     "relu",    "gelu_tanh",
                                                 "gelu_erf", "sigmoid", "tanh"};
  return names;
}

bool is_epilogue_activation(std::string_view name) {
  const auto& names = epilogue_activations();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<std::string> epilogue_activation_for(std::string_view op, const Attrs& attrs) {
  if (op == "relu" || op == "sigmoid" || op == "tanh") return std::string(op);
  if (op == "gelu") {
    const AttrValue* a = attrs.find("approximate");
    bool approximate = a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
    return std::string(approximate ? "gelu_tanh" : "gelu_erf");
  }
  return std::nullopt;
}

}  // namespace tern::ops
