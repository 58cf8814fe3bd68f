// The program of a fused_elementwise node, as typed attributes (no byte blobs):
//   opcodes    (ints)   one FusedOpcode per instruction
//   operands   (ints)   two slot indices per instruction (-1 where an operand is unused)
//   immediates (floats) one value per instruction (the value of kImm, 0 otherwise)
// Slots 0..num_inputs-1 are the node's inputs (broadcast to the output shape); slot
// num_inputs + k is the result of instruction k. The last instruction's result is the output.
// Instructions may only read earlier slots. Intermediates are held in the compute type
// (float for f32/bf16/f16, double for f64); only the final result is rounded to the dtype.
//
// Opcode values are part of the saved-graph format: never renumber, only append.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/ops/attrs.h"

namespace tern::ops {

enum class FusedOpcode : int64_t {
  kImm = 0,  // the instruction's immediate (a scalar)
  // unary: f(a)
  kNeg = 1,
  kAbs = 2,
  kExp = 3,
  kLog = 4,
  kLog1p = 5,
  kSqrt = 6,
  kRsqrt = 7,
  kSquare = 8,
  kTanh = 9,
  kSigmoid = 10,
  kRelu = 11,
  kSoftplus = 12,
  kSin = 13,
  kCos = 14,
  kSign = 15,
  kGeluTanh = 16,
  kGeluErf = 17,
  kRoundBF16 = 18,  // a rounded to the nearest bf16 value (ties to even, NaN kept quiet), kept in
                    // the compute type: a cast to bf16 and back in one pass (widen_contractions)
  // binary: f(a, b)
  kAdd = 32,
  kSub = 33,
  kMul = 34,
  kDiv = 35,
  kPow = 36,
  kMaximum = 37,
  kMinimum = 38,
  kReluGrad = 39,      // (dy, x): x > 0 ? dy : 0
  kSigmoidGrad = 40,   // (dy, y): dy * y * (1 - y)
  kTanhGrad = 41,      // (dy, y): dy * (1 - y * y)
  kGeluTanhGrad = 42,  // (dy, x): dy * d/dx gelu_tanh(x)
  kGeluErfGrad = 43,   // (dy, x): dy * d/dx gelu_erf(x)
};

// Epilogue activations of fused_matmul / fused_conv2d (the `activation` attribute, parsed once
// through activations()).
enum class Activation : int { kNone, kRelu, kGeluTanh, kGeluErf, kSigmoid, kTanh };
inline constexpr int kNumActivations = 6;

// An opcode's scalar formula in both compute types; binary opcodes read b, unary ones ignore it.
struct ScalarFn {
  float (*f32)(float a, float b) = nullptr;
  double (*f64)(double a, double b) = nullptr;
};

// One row per opcode: everything that makes an op fusable. The scalar formula is the reference
// (ref kernel, constant folding); the CPU backend's vector formulas are a second array indexed
// by the same opcodes (tern/backends/cpu/fused_elementwise_cpu.cc), checked complete by a test.
// bf16 / f16 programs compute every instruction in float and round once, at the end; per opcode,
// `bf16_follows` says whether auto mixed precision lets the op run in 16 bits between 16-bit
// producers (its follow list), and `epilogue` whether it can be a matmul / conv epilogue.
struct FusedOpcodeInfo {
  FusedOpcode code;
  std::string_view name;  // "relu", "gelu_tanh", ... (for printing and messages)
  int arity;              // 0 (kImm), 1 or 2
  std::string_view op;    // the graph op it stands for ("gelu" for kGeluTanh and kGeluErf)
  std::optional<bool> gelu_approximate;  // the op's `approximate` attribute, for gelu ops
  ScalarFn scalar;
  bool bf16_follows = false;
  std::optional<Activation> epilogue;
};

// Every opcode, in numeric order.
const std::vector<FusedOpcodeInfo>& fused_opcodes();
// nullptr if `code` is not an opcode.
const FusedOpcodeInfo* fused_opcode_info(int64_t code);
inline const FusedOpcodeInfo& fused_opcode_info(FusedOpcode code) {
  return *fused_opcode_info(static_cast<int64_t>(code));
}
// The opcode computing graph op `op` with `attrs` elementwise on same-dtype floats, if any.
std::optional<FusedOpcode> fused_opcode_for(std::string_view op, const Attrs& attrs);

struct FusedInstruction {
  FusedOpcode op = FusedOpcode::kImm;
  int a = -1;  // slot of operand 0 (-1 if none)
  int b = -1;  // slot of operand 1 (-1 if none)
  double imm = 0;
};

struct FusedProgram {
  int num_inputs = 0;
  std::vector<FusedInstruction> code;

  int num_slots() const { return num_inputs + static_cast<int>(code.size()); }
  int result_slot() const { return num_slots() - 1; }
  // Back to attributes (opcodes, operands, immediates).
  void to_attrs(Attrs& attrs) const;
  // "relu(add(in0, in1))"-style rendering, for messages and TERN_VERBOSE.
  std::string to_string() const;
};

// Decodes and validates the program attributes of a node with `num_inputs` inputs. Returns ""
// and fills `out`, or returns the problem ("operand 1 of instruction 2 reads slot 7, ...").
std::string decode_fused_program(const Attrs& attrs, int num_inputs, FusedProgram* out);

// --- epilogues of fused_matmul / fused_conv2d ---

struct ActivationInfo {
  Activation activation;
  std::string_view name;          // the `activation` attribute's value
  const FusedOpcodeInfo* opcode;  // its formula; null for kNone
};
// Every activation, indexed by the enum: "none" and each opcode row with an `epilogue`.
const std::vector<ActivationInfo>& activations();
inline const ActivationInfo& activation_info(Activation a) {
  return activations()[static_cast<size_t>(a)];
}
std::optional<Activation> parse_activation(std::string_view name);
// "none, relu, gelu_tanh, gelu_erf, sigmoid, tanh" (for messages).
std::string activation_names();

// The attributes of a fused_matmul / fused_conv2d's base op (matmul, conv2d): the fused node's
// minus its epilogue (activation, has_bias, has_residual) and pool (pool, pool_*) attributes.
// Used to re-expand a fused node (its gradient) and by its reference kernel.
Attrs fused_base_attrs(const Attrs& fused);
// The activation graph op `op` with `attrs` computes ("gelu" maps by its `approximate`), if any.
std::optional<Activation> epilogue_activation_for(std::string_view op, const Attrs& attrs);

}  // namespace tern::ops
