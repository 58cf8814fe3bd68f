// The model directory: tern's SavedModel. One version = one directory, written atomically (every
// file into a temp sibling, each fsync'ed, the directory fsync'ed, renamed to its final name
// without replacing anything, the parent fsync'ed), so a server polling the base path never sees
// half a version. Files:
//
//   tern_model.json       manifest: {"format": "tern.model", "format_version": 1, "model": name}
//   graph.tern            the inference graph in tern's IR text (ir/printer.h), traced at one
//                         batch size and rebuilt at others (rebatch.h): raw inputs ->
//                         preprocessing ops -> model forward -> outputs
//   weights.safetensors   every variable the graph reads, nothing else
//   signatures.json       {"signatures": {name: {"method_name", "inputs", "outputs"}}}; an input
//                         is alias -> {"dtype": "DT_UINT8", "shape": [-1, 28, 28], "tensor": graph
//                         input, optional "decoder", optional "nullable": true}; an output is alias -> {"dtype", "shape",
//                         "tensor": graph output} or {..., "labels": asset file} (class names
//                         repeated per row, DT_STRING [-1, classes])
//   assets/               class names, preprocessing statistics, vocabularies (plain files)
//   fingerprint.json      {"sha256": hex}: sha256 over every other file's relative path and
//                         contents, in path order
//
// read_model_dir validates all of it and every error names the file (and the key, alias or
// tensor); load_servable turns a directory into a Servable (loaded_model.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/element_fns.h"
#include "tern/data/example_parser.h"
#include "tern/io/safetensors.h"
#include "tern/ir/graph.h"
#include "tern/serve/servable.h"
#include "tern/serve/signature.h"

namespace tern::serve {

inline constexpr int kModelDirFormatVersion = 1;
inline constexpr const char* kManifestFile = "tern_model.json";
inline constexpr const char* kGraphFile = "graph.tern";
inline constexpr const char* kWeightsFile = "weights.safetensors";
inline constexpr const char* kSignaturesFile = "signatures.json";
inline constexpr const char* kFingerprintFile = "fingerprint.json";
inline constexpr const char* kAssetsDir = "assets";

// How a DT_STRING signature input becomes a numeric graph input before the graph runs.
enum class DecoderKind {
  kNone,
  kImage,    // each string an encoded JPEG / PNG -> u8 [height, width, channels] (data's codecs)
  kExample,  // each string a serialized tf.Example; `feature` (int64_list of values, or one
             // bytes_list value of raw bytes) -> `dtype` `shape`; with `example_spec`, parsed by
             // data::parse_example_record with the training pipeline's FixedLen feature spec
  kFingerprint,  // each string (a categorical value) -> its i64 fingerprint64 (FNV-1a 64 of the
                 // bytes, tern/base/fingerprint.h): a data transform's categorical raw feature
};
// "none", "image", "example", "fingerprint"
std::string_view decoder_kind_name(DecoderKind kind);

// kImage runs the training pipeline's own tern/data functions, in this order: the decode
// (data::decode_image, or data::image_dir_decode when `height` > 0: the image_dir source's decode
// and resize to its image size), then `steps` (data::apply_element_fn in evaluation form: resize,
// center_crop). The result (u8, or f32 after a bilinear resize) must have the graph input's
// per-example shape; a request whose images decode to another size is an InvalidArgument naming
// the input and both sizes.
struct InputDecoder {
  DecoderKind kind = DecoderKind::kNone;
  std::string feature;  // kExample: the feature key
  int channels = 0;     // kImage: 1 gray, 3 RGB, 4 RGBA (0 = as stored; must match the graph)
  int64_t height = 0, width = 0;  // kImage: image_dir_decode's size (0: decode_image)
  data::ResizeMethod method = data::ResizeMethod::kBilinear;  // image_dir_decode's interpolation
  std::vector<data::ElementFnSpec> steps;                     // kImage: resize / center_crop
  // kExample: the config's FixedLen feature spec (name = `feature`); none: the plain rules above.
  std::vector<data::FeatureSpec> example_spec;
  bool operator==(const InputDecoder&) const = default;
};

// True for the element functions an image decoder may run as `steps`.
bool image_decoder_step(data::ElementFnKind kind);

// One request string through an image decoder: u8 / f32 [H, W, C]. DataLoss (undecodable bytes) or
// InvalidArgument naming `what`.
Tensor run_image_decoder(const InputDecoder& decoder, std::string_view bytes,
                         const std::string& what);

// A signature as stored: what clients see plus where each alias lives in the graph.
struct StoredSignature {
  Signature signature;
  std::map<std::string, std::string> input_tensors;   // alias -> graph input name
  std::map<std::string, InputDecoder> decoders;       // alias -> decoder (DT_STRING inputs)
  std::map<std::string, std::string> output_tensors;  // alias -> graph output name
  std::map<std::string, std::string> output_labels;   // alias -> asset file of class names
  bool operator==(const StoredSignature&) const = default;
};
using StoredSignatures = std::map<std::string, StoredSignature>;

// signatures.json's text <-> signatures: parse (InvalidArgument naming `file` and the key for
// anything malformed) and write (what write_model_dir stores; parse(write(x)) == x).
StoredSignatures parse_signatures(std::string_view text, const std::string& file);
std::string write_signatures(const StoredSignatures& signatures);

struct ModelDirContents {
  std::string model_name;
  std::unique_ptr<ir::Graph> graph;
  io::NamedTensors weights;
  StoredSignatures signatures;
  std::map<std::string, std::string> assets;  // file name under assets/ -> bytes
  std::string fingerprint;                    // set by read_model_dir (and write_model_dir)
  std::string tern_version;  // set by read_model_dir: the tern that wrote it ("" before 0.5.0)
};

// Writes `contents` as version directory `dir` (atomically, see above); FailedPrecondition if `dir`
// exists; the parent is created. Checks the contents as read_model_dir would first. Returns the
// fingerprint.
std::string write_model_dir(const ModelDirContents& contents, const std::string& dir);

// Reads and validates `dir`: missing files, the manifest's format version, the fingerprint,
// malformed JSON (naming the key), signatures against the graph's inputs and outputs (names,
// dtypes, shapes), weights against the graph's variables (missing, extra, wrong type). Errors are
// InvalidArgument / NotFound / DataLoss naming the file.
ModelDirContents read_model_dir(const std::string& dir);

// The sha256 fingerprint of a directory's files (every file but fingerprint.json).
std::string fingerprint_model_dir(const std::string& dir);

// Loads a version directory as a Servable (read_model_dir + compiled executables per batch size,
// loaded_model.h).
ServablePtr load_servable(const std::string& dir);
// The documented C++ entry point: the same as load_servable.
ServablePtr load(const std::string& dir);

}  // namespace tern::serve
