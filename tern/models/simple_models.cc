// The MLP and the small CNN.
#include "tern/models/zoo.h"
#include "tern/nn/activation_layer.h"
#include "tern/nn/batch_norm.h"
#include "tern/nn/conv2d.h"
#include "tern/nn/dense.h"
#include "tern/nn/dropout.h"
#include "tern/nn/pooling.h"
#include "tern/nn/reshaping.h"

namespace tern::models {

std::shared_ptr<nn::Model> mlp(const Shape& input_shape, int64_t num_classes,
                               const std::vector<int64_t>& units, const std::string& activation,
                               double dropout, bool batch_norm) {
  // Checked here: a rate <= 0 (or NaN) adds no Dropout layer, whose own check never ran.
  TERN_CHECK_ARG(dropout >= 0 && dropout < 1, "mlp: dropout must be in [0, 1), got ", dropout);
  std::vector<nn::LayerPtr> layers;
  if (input_shape.rank() != 1) layers.push_back(nn::Flatten());
  for (int64_t u : units) {
    if (batch_norm) {
      layers.push_back(nn::Dense(u, nn::DenseOptions{.use_bias = false}));
      layers.push_back(nn::BatchNormalization());
      layers.push_back(nn::Activation(activation));
    } else {
      layers.push_back(nn::Dense(u, activation));
    }
    if (dropout > 0) layers.push_back(nn::Dropout(dropout));
  }
  layers.push_back(nn::Dense(num_classes));
  return std::make_shared<nn::Sequential>(layers, input_shape, "mlp");
}

std::shared_ptr<nn::Model> cnn(const Shape& input_shape, int64_t num_classes,
                               const std::vector<int64_t>& filters, int64_t dense_units,
                               double dropout) {
  TERN_CHECK_ARG(input_shape.rank() == 3 || input_shape.rank() == 2,
                 "cnn: input shape must be [h, w, c] or [h, w], got ", input_shape);
  TERN_CHECK_ARG(dropout >= 0 && dropout < 1, "cnn: dropout must be in [0, 1), got ", dropout);
  // 0 leaves the hidden dense layer out; a negative count dropped it silently.
  TERN_CHECK_ARG(dense_units >= 0, "cnn: dense_units must be >= 0 (0: no hidden dense layer), got ",
                 dense_units);
  std::vector<nn::LayerPtr> layers;
  if (input_shape.rank() == 2)
    layers.push_back(nn::Reshape({input_shape.dim(0), input_shape.dim(1), 1}));
  for (int64_t f : filters) {
    layers.push_back(nn::Conv2D(f, 3, {.activation = "relu"}));
    layers.push_back(nn::MaxPooling2D(2));
  }
  layers.push_back(nn::Flatten());
  if (dropout > 0) layers.push_back(nn::Dropout(dropout));
  if (dense_units > 0) layers.push_back(nn::Dense(dense_units, "relu"));
  layers.push_back(nn::Dense(num_classes));
  return std::make_shared<nn::Sequential>(layers, input_shape, "cnn");
}

void add_simple_models(std::vector<ZooEntry>& z) {
  using ops::AttrKind;
  z.push_back(
      {"mlp",
       "Dense layers with an activation, optional batch norm and dropout, then a logits layer.",
       {{"units", AttrKind::kInts, std::vector<int64_t>{512, 256}},
        {"activation", AttrKind::kString, std::string("relu")},
        {"dropout", AttrKind::kFloat, 0.0},
        {"batch_norm", AttrKind::kBool, false}},
       [](const Shape& in, int64_t classes, const ops::Attrs& a) {
         return mlp(in, classes, a.get_ints("units"), a.get_string("activation"),
                    a.get_float("dropout"), a.get_bool("batch_norm"));
       }});
  z.push_back({"cnn",
               "Conv2D(3x3, relu) + MaxPool(2) per entry of `filters`, Flatten, Dropout, "
               "Dense(relu), logits.",
               {{"filters", AttrKind::kInts, std::vector<int64_t>{32, 64}},
                {"dense_units", AttrKind::kInt, int64_t{128}},
                {"dropout", AttrKind::kFloat, 0.0}},
               [](const Shape& in, int64_t classes, const ops::Attrs& a) {
                 return cnn(in, classes, a.get_ints("filters"), a.get_int("dense_units"),
                            a.get_float("dropout"));
               }});
}

}  // namespace tern::models
