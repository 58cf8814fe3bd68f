// A Transformer encoder classifier for token sequences, built with the functional API.
//
//   Input ids [seq_len] (i64; floating ids are cast by the Embedding)
//   Embedding(vocab_size, d_model) + PositionEmbedding(seq_len)   (added)
//   num_layers encoder blocks, post-LN (the original Transformer, keras_hub's default):
//     x = LN(x + Dropout(MHA(x, x)));  x = LN(x + Dropout(Dense(d_model)(Dense(ff_dim, gelu)(x))))
//   or pre-LN (normalize_first):
//     x = x + Dropout(MHA(LN(x), LN(x)));  x = x + Dropout(FFN(LN(x)));  a final LN after the stack
//   GlobalAveragePooling1D (mean over the sequence) -> Dense(num_classes) logits
// MHA uses key_dim = d_model / num_heads and `dropout` on its attention probabilities;
// LayerNormalization epsilon is 1e-5. Layer names: "token_embedding", "position_embedding",
// "encoder<i>_attention", "encoder<i>_ffn_in", ..., "predictions".
#pragma once

#include "tern/nn/model.h"

namespace tern::models {

struct TransformerOptions {
  int64_t vocab_size = 0;  // required
  int64_t seq_len = 0;     // 0: from the input shape; otherwise must equal it
  int64_t num_layers = 2;
  int64_t d_model = 64;
  int64_t num_heads = 4;
  int64_t ff_dim = 128;
  double dropout = 0.1;
  bool normalize_first = false;  // pre-LN blocks
};

std::shared_ptr<nn::Model> transformer_classifier(const Shape& input_shape, int64_t num_classes,
                                                  const TransformerOptions& options);

}  // namespace tern::models
