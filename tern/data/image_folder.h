// Image folders, one subfolder per class (Keras' image_dataset_from_directory):
//
//   root/cat/001.jpg, root/cat/002.png, root/dog/a.jpeg, ...
//
// Class names are the subfolders sorted by name (bytewise, as Python's sorted()); their index is
// the label. Files are those ending in .jpg, .jpeg or .png (any case) anywhere under a class
// folder, sorted by path within each class.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/image_ops.h"

namespace tern::data {

struct ImageFolder {
  std::vector<std::string> class_names;
  std::vector<std::string> files;
  std::vector<int64_t> labels;  // index into class_names, one per file
};

// The class subfolders of `root`, sorted. NotFound if `root` is not a directory; InvalidArgument
// if it has none.
std::vector<std::string> image_folder_classes(const std::string& root);

// NotFound if `root` is not a directory; InvalidArgument if it has no class subfolder, if
// `class_names` is given and the subfolders are not exactly those classes (a folder more, or a
// class without one: named), if a symlinked folder leads back to a folder it is in (a loop), or if
// an entry named like an image is not a regular file. `class_names` (if given) fixes the classes
// and their order: give the training split's to every split, so that labels mean the same.
ImageFolder list_image_folder(const std::string& root,
                              const std::vector<std::string>& class_names = {});

enum class LabelMode {
  kInt,          // i32 [] class index
  kCategorical,  // f32 [num_classes] one-hot
  kBinary,       // f32 [1], two classes only
  kNone,         // images only
};

struct ImageDatasetOptions {
  LabelMode labels = LabelMode::kInt;
  std::vector<std::string> class_names;  // explicit classes (and order); empty: all subfolders
  int channels = 3;                      // 1 grayscale, 3 rgb, 4 rgba
  int64_t batch_size = 32;               // 0: unbatched elements
  int64_t image_height = 256, image_width = 256;
  ResizeMethod interpolation = ResizeMethod::kBilinear;
  bool shuffle = true;
  std::optional<uint64_t> seed;            // required with shuffle and validation_split
  double validation_split = 0;             // fraction held out (the last files after shuffling)
  std::string subset;                      // "training" or "validation" (with validation_split)
  int64_t num_parallel_calls = kAutotune;  // decode + resize threads
};

struct ImageDirectoryDataset {
  DatasetPtr dataset;  // (f32 [B, H, W, C] in [0, 255], labels) per ImageDatasetOptions
  std::vector<std::string> class_names;
  std::vector<std::string> files;  // of this subset, in the seeded file-list shuffle order
  std::vector<int64_t> labels;
};

ImageDirectoryDataset image_dataset_from_directory(const std::string& root,
                                                   const ImageDatasetOptions& options = {});

// Shuffles `files` and `labels` together with a seeded Fisher-Yates (Philox); the order Keras
// would produce differs (it uses NumPy's generator), the partition rules are the same.
void shuffle_file_list(std::vector<std::string>& files, std::vector<int64_t>& labels,
                       uint64_t seed);

// (path as u8[n], label as i64[]) elements of a file list, in order.
DatasetPtr file_label_dataset(const std::vector<std::string>& files,
                              const std::vector<int64_t>& labels);

}  // namespace tern::data
