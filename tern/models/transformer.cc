// The Transformer encoder classifier and its zoo entry.
#include "tern/models/transformer.h"

#include "tern/models/zoo.h"
#include "tern/nn/add_layer.h"
#include "tern/nn/dense.h"
#include "tern/nn/dropout.h"
#include "tern/nn/embedding.h"
#include "tern/nn/global_pooling1d.h"
#include "tern/nn/layer_norm.h"
#include "tern/nn/multi_head_attention.h"
#include "tern/nn/position_embedding.h"

namespace tern::models {
namespace {

using nn::SymbolicTensor;

SymbolicTensor layer_norm(SymbolicTensor x, const std::string& name) {
  return nn::LayerNormalization({.epsilon = 1e-5, .name = name})(x);
}

SymbolicTensor maybe_dropout(SymbolicTensor x, double rate, const std::string& name) {
  return rate > 0 ? nn::Dropout(rate, -1, name)(x) : x;
}

SymbolicTensor encoder_block(SymbolicTensor x, const TransformerOptions& o, const std::string& p) {
  nn::MultiHeadAttentionOptions mha{.dropout = o.dropout, .name = p + "_attention"};
  auto attention = nn::MultiHeadAttention(o.num_heads, o.d_model / o.num_heads, mha);
  auto ffn = [&](SymbolicTensor h) {
    h = nn::Dense(o.ff_dim, nn::DenseOptions{.activation = "gelu", .name = p + "_ffn_in"})(h);
    h = nn::Dense(o.d_model, nn::DenseOptions{.name = p + "_ffn_out"})(h);
    return maybe_dropout(h, o.dropout, p + "_ffn_dropout");
  };
  if (o.normalize_first) {
    SymbolicTensor h = layer_norm(x, p + "_attention_norm");
    h = maybe_dropout(attention({h, h}), o.dropout, p + "_attention_dropout");
    x = nn::Add(p + "_attention_add")({x, h});
    h = ffn(layer_norm(x, p + "_ffn_norm"));
    return nn::Add(p + "_ffn_add")({x, h});
  }
  SymbolicTensor h = maybe_dropout(attention({x, x}), o.dropout, p + "_attention_dropout");
  x = layer_norm(nn::Add(p + "_attention_add")({x, h}), p + "_attention_norm");
  return layer_norm(nn::Add(p + "_ffn_add")({x, ffn(x)}), p + "_ffn_norm");
}

}  // namespace

std::shared_ptr<nn::Model> transformer_classifier(const Shape& input_shape, int64_t num_classes,
                                                  const TransformerOptions& o) {
  TERN_CHECK_ARG(input_shape.rank() == 1,
                 "transformer_classifier: input shape must be [seq_len], got ", input_shape);
  int64_t seq_len = input_shape.dim(0);
  TERN_CHECK_ARG(o.seq_len == 0 || o.seq_len == seq_len, "transformer_classifier: seq_len ",
                 o.seq_len, " differs from the input shape ", input_shape);
  TERN_CHECK_ARG(o.vocab_size > 0, "transformer_classifier: vocab_size must be positive, got ",
                 o.vocab_size);
  TERN_CHECK_ARG(
      o.num_layers >= 0 && o.d_model > 0 && o.num_heads > 0 && o.ff_dim > 0,
      "transformer_classifier: num_layers must be >= 0 and d_model, num_heads, ff_dim positive");
  TERN_CHECK_ARG(o.d_model % o.num_heads == 0, "transformer_classifier: d_model ", o.d_model,
                 " must be divisible by num_heads ", o.num_heads);
  TERN_CHECK_ARG(o.dropout >= 0 && o.dropout < 1,
                 "transformer_classifier: dropout must be in [0, 1), got ", o.dropout);
  TERN_CHECK_ARG(num_classes > 0, "transformer_classifier: num_classes must be positive, got ",
                 num_classes);
  SymbolicTensor ids = nn::Input(input_shape, DType::kI64, "token_ids");
  SymbolicTensor tokens = nn::Embedding(o.vocab_size, o.d_model, {.name = "token_embedding"})(ids);
  SymbolicTensor positions =
      nn::PositionEmbedding(seq_len, "glorot_uniform", "position_embedding")(tokens);
  SymbolicTensor x = nn::Add("embeddings_add")({tokens, positions});
  x = maybe_dropout(x, o.dropout, "embeddings_dropout");
  for (int64_t i = 0; i < o.num_layers; ++i) x = encoder_block(x, o, str_cat("encoder", i));
  if (o.normalize_first) x = layer_norm(x, "final_norm");
  x = nn::GlobalAveragePooling1D("mean_pool")(x);
  x = nn::Dense(num_classes, nn::DenseOptions{.name = "predictions"})(x);
  return std::make_shared<nn::Model>(std::vector<SymbolicTensor>{ids},
                                     std::vector<SymbolicTensor>{x}, "transformer_classifier");
}

void add_transformer_models(std::vector<ZooEntry>& z) {
  using ops::AttrKind;
  z.push_back(
      {"transformer_classifier",
       "Token ids [seq_len] -> Embedding + learned positions -> num_layers Transformer encoder "
       "blocks (post-LN, or pre-LN with normalize_first) -> mean over the sequence -> logits.",
       {{"vocab_size", AttrKind::kInt, std::nullopt},
        {"seq_len", AttrKind::kInt, int64_t{0}},
        {"num_layers", AttrKind::kInt, int64_t{2}},
        {"d_model", AttrKind::kInt, int64_t{64}},
        {"num_heads", AttrKind::kInt, int64_t{4}},
        {"ff_dim", AttrKind::kInt, int64_t{128}},
        {"dropout", AttrKind::kFloat, 0.1},
        {"normalize_first", AttrKind::kBool, false}},
       [](const Shape& in, int64_t classes, const ops::Attrs& a) {
         TransformerOptions o{.vocab_size = a.get_int("vocab_size"),
                              .seq_len = a.get_int("seq_len"),
                              .num_layers = a.get_int("num_layers"),
                              .d_model = a.get_int("d_model"),
                              .num_heads = a.get_int("num_heads"),
                              .ff_dim = a.get_int("ff_dim"),
                              .dropout = a.get_float("dropout"),
                              .normalize_first = a.get_bool("normalize_first")};
         return transformer_classifier(in, classes, o);
       }});
}

}  // namespace tern::models
