// SequenceExample parsing into tensors: context features as for Example, feature lists stacked
// along a leading step axis (fixed) or as values + per-step lengths (var_len).
#include <set>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/data/example_parser.h"

namespace tern::data {
namespace {

// The FeatureSpec that parses a list's steps as rows of a batch.
FeatureSpec step_spec(const SequenceFeatureSpec& s) {
  FeatureSpec f{
      .name = s.name, .kind = s.kind, .dtype = s.dtype, .var_len = s.var_len, .shape = s.shape};
  f.ragged = s.var_len;
  return f;
}

}  // namespace

void validate_sequence_spec(const SequenceExampleSpec& spec, std::string_view what) {
  validate_feature_specs(spec.context, what);
  std::vector<FeatureSpec> steps;
  for (const SequenceFeatureSpec& s : spec.sequence) {
    TERN_CHECK_ARG(!(s.var_len && s.kind == FeatureKind::kBytes), what, ": feature_list '", s.name,
                   "': bytes lists take a fixed shape (one value per step)");
    steps.push_back(step_spec(s));
  }
  validate_feature_specs(steps, what);
  std::set<std::string, std::less<>> context_names;
  for (const FeatureSpec& c : spec.context) context_names.insert(c.name);
  for (const SequenceFeatureSpec& s : spec.sequence) {
    TERN_CHECK_ARG(!context_names.contains(s.name), what, ": '", s.name,
                   "' names both a context feature and a feature_list");
  }
}

std::vector<std::string> sequence_output_names(const SequenceExampleSpec& spec) {
  std::vector<std::string> out = feature_output_names(spec.context);
  for (const SequenceFeatureSpec& s : spec.sequence) {
    if (s.var_len) {
      out.push_back(s.name + ".values");
      out.push_back(s.name + ".row_lengths");
    } else {
      out.push_back(s.name);
    }
  }
  return out;
}

Element parse_sequence_example_record(std::string_view record, const SequenceExampleSpec& spec,
                                      const RecordNames& names) {
  constexpr std::string_view kWhat = "tf.train.SequenceExample";
  validate_sequence_spec(spec, "parse_sequence_example");
  const std::string name = names.name(kWhat, 0);
  const SequenceExample ex = parse_sequence_example_proto(record, name);
  Element out = features_to_batch({&ex.context}, spec.context, names, true, kWhat);
  for (const SequenceFeatureSpec& s : spec.sequence) {
    auto it = ex.feature_lists.find(s.name);
    if (it == ex.feature_lists.end() && !s.allow_missing) {
      throw_error(ErrorCode::kInvalidArgument, name, ", feature_list '", printable(s.name),
                  "': required feature_list is missing (set allow_missing)");
    }
    FeatureRows rows{.what = kWhat, .names = names, .rows_are_steps = true};
    if (it != ex.feature_lists.end()) {
      for (const Feature& step : it->second) rows.rows.push_back(&step);
    }
    const FeatureSpec f = step_spec(s);
    if (!s.var_len) {
      // An empty step of a fixed list is an error, not a default.
      for (size_t i = 0; i < rows.rows.size(); ++i) {
        if (rows.rows[i]->size() == 0 && Shape(s.shape).num_elements() != 0) {
          throw_error(ErrorCode::kInvalidArgument, name, ", feature_list '", printable(s.name),
                      "' step ", i, ": empty step for shape ", Shape(s.shape));
        }
      }
    }
    feature_rows_to_tensors(rows, f, false, out);
  }
  return out;
}

}  // namespace tern::data
