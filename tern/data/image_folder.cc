// Image folders: listing classes and files, and image_dataset_from_directory.
#include "tern/data/image_folder.h"

#include <algorithm>
#include <filesystem>

#include "tern/base/error.h"
#include "tern/base/philox.h"
#include "tern/base/strings.h"
#include "tern/data/image_codec.h"
#include "tern/data/list_files_dataset.h"

namespace tern::data {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// What a directory entry named like an image but not a regular file is, for the error.
std::string not_a_file(const fs::directory_entry& e) {
  std::error_code ec;
  fs::file_status st = e.status(ec);
  if (ec || st.type() == fs::file_type::not_found) return "a broken symlink";
  switch (st.type()) {
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
    case fs::file_type::block:
      return "a device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// Every image file under `dir`, sorted. Symlinked folders are followed, but one that leads back
// to a folder being walked (a loop: class/loop -> ../..) is an error, as is an entry named like an
// image that is not a regular file (a broken link, a FIFO, a device): before, a loop multiplied
// the samples (64 images became 2,624) and the others were skipped silently (bad-input F17).
std::vector<std::string> image_files_under(const fs::path& root, const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  // The real folders on the path from `dir` down to the current entry, and the root above it.
  std::vector<fs::path> ancestors = {fs::canonical(dir, ec)};
  if (ec)
    throw_error(ErrorCode::kUnavailable, printable(dir.string()), ": cannot list (", ec.message(),
                ")");
  const fs::path real_root = fs::canonical(root, ec);
  if (ec)
    throw_error(ErrorCode::kUnavailable, printable(root.string()), ": cannot list (", ec.message(),
                ")");
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& e = *it;
    ancestors.resize(static_cast<size_t>(it.depth()) + 1);
    if (e.is_directory(ec)) {
      fs::path real = fs::canonical(e.path(), ec);
      if (ec) break;
      if (real == real_root ||
          std::find(ancestors.begin(), ancestors.end(), real) != ancestors.end()) {
        throw_error(ErrorCode::kInvalidArgument, printable(e.path().string()),
                    ": a symlink loop (it leads back to ", printable(real.string()),
                    ", a folder it is in); remove it");
      }
      ancestors.push_back(real);
      continue;
    }
    ec.clear();
    if (!is_image_file(e.path())) continue;
    if (!e.is_regular_file(ec)) {
      throw_error(ErrorCode::kInvalidArgument, printable(e.path().string()),
                  ": named like an image but ", not_a_file(e));
    }
    out.push_back(e.path().string());
  }
  if (ec)
    throw_error(ErrorCode::kUnavailable, printable(dir.string()), ": cannot list (", ec.message(),
                ")");
  std::sort(out.begin(), out.end());
  return out;
}

// Class names come from folder names (or a list): shown through printable() (F24).
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + printable(n);
  return out;
}

}  // namespace

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw_error(ErrorCode::kNotFound, printable(root),
                ": not a directory (expected one subfolder per class)");
  }
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (e.is_directory()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  TERN_CHECK_ARG(!out.empty(), printable(root), ": no class subfolders");
  return out;
}

ImageFolder list_image_folder(const std::string& root,
                              const std::vector<std::string>& class_names) {
  ImageFolder out;
  out.class_names = image_folder_classes(root);
  if (!class_names.empty()) {
    // The folders must be exactly the classes (Keras: class_names must match the subfolders):
    // a folder more or less would shift or drop labels silently (bad-input report F6).
    std::vector<std::string> want = class_names;
    std::sort(want.begin(), want.end());
    for (const std::string& c : out.class_names) {
      TERN_CHECK_ARG(std::binary_search(want.begin(), want.end(), c), printable(root),
                     ": subfolder '", printable(c), "' is not one of the ", class_names.size(),
                     " classes (", joined(class_names),
                     "); every split must hold the same class folders");
    }
    for (const std::string& c : want) {
      TERN_CHECK_ARG(std::binary_search(out.class_names.begin(), out.class_names.end(), c),
                     printable(root), ": class '", printable(c),
                     "' has no subfolder (the classes: ", joined(class_names), ")");
    }
    out.class_names = class_names;
  }
  for (size_t label = 0; label < out.class_names.size(); ++label) {
    for (std::string& f : image_files_under(root, fs::path(root) / out.class_names[label])) {
      out.files.push_back(std::move(f));
      out.labels.push_back(static_cast<int64_t>(label));
    }
  }
  return out;
}

void shuffle_file_list(std::vector<std::string>& files, std::vector<int64_t>& labels,
                       uint64_t seed) {
  TERN_CHECK_ARG(files.size() == labels.size(), "shuffle_file_list: ", files.size(), " files but ",
                 labels.size(), " labels");
  PhiloxStream rng(seed);
  for (size_t i = files.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.next_below(i));
    std::swap(files[i - 1], files[j]);
    std::swap(labels[i - 1], labels[j]);
  }
}

DatasetPtr file_label_dataset(const std::vector<std::string>& files,
                              const std::vector<int64_t>& labels) {
  TERN_CHECK_ARG(files.size() == labels.size(), "file_label_dataset: ", files.size(), " files but ",
                 labels.size(), " labels");
  std::vector<Element> elements;
  elements.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    Element e{bytes_tensor(files[i]), Tensor::scalar(DType::kI64, static_cast<double>(labels[i]))};
    e.origin = SourcePosition::whole_file(source_file_id(files[i]));
    elements.push_back(std::move(e));
  }
  return from_elements(std::move(elements));
}

ImageDirectoryDataset image_dataset_from_directory(const std::string& root,
                                                   const ImageDatasetOptions& options) {
  const ImageDatasetOptions& o = options;
  TERN_CHECK_ARG(o.channels == 1 || o.channels == 3 || o.channels == 4,
                 "image_dataset_from_directory: channels must be 1, 3 or 4, got ", o.channels);
  TERN_CHECK_ARG(o.image_height > 0 && o.image_width > 0,
                 "image_dataset_from_directory: image size ", o.image_height, "x", o.image_width,
                 " must be positive");
  TERN_CHECK_ARG(o.batch_size >= 0, "image_dataset_from_directory: batch_size ", o.batch_size,
                 " < 0");
  TERN_CHECK_ARG(o.validation_split >= 0 && o.validation_split < 1,
                 "image_dataset_from_directory: validation_split must be in [0, 1), got ",
                 o.validation_split);
  const bool split = o.validation_split > 0;
  TERN_CHECK_ARG(!split || o.subset == "training" || o.subset == "validation",
                 "image_dataset_from_directory: with validation_split, subset must be 'training' "
                 "or 'validation', got '",
                 o.subset, "'");
  TERN_CHECK_ARG(split || o.subset.empty(), "image_dataset_from_directory: subset '", o.subset,
                 "' needs a validation_split");
  TERN_CHECK_ARG(!(split && o.shuffle && !o.seed),
                 "image_dataset_from_directory: with "
                 "validation_split and shuffle, give a seed so both subsets split the same files");

  ImageFolder folder = list_image_folder(root, o.class_names);
  const int64_t num_classes = static_cast<int64_t>(folder.class_names.size());
  TERN_CHECK_ARG(o.labels != LabelMode::kBinary || num_classes == 2, root,
                 ": binary labels need exactly 2 classes, found ", num_classes);
  const uint64_t seed = o.seed.value_or(0);
  if (o.shuffle) shuffle_file_list(folder.files, folder.labels, seed);
  if (split) {
    const auto n = static_cast<int64_t>(folder.files.size());
    const auto n_val = static_cast<int64_t>(o.validation_split * static_cast<double>(n));
    const int64_t begin = o.subset == "training" ? 0 : n - n_val;
    const int64_t end = o.subset == "training" ? n - n_val : n;
    folder.files = {folder.files.begin() + begin, folder.files.begin() + end};
    folder.labels = {folder.labels.begin() + begin, folder.labels.begin() + end};
  }
  TERN_CHECK_ARG(!folder.files.empty(), root, ": no .jpg/.jpeg/.png files",
                 split ? " in the " + o.subset + " subset" : std::string());

  DatasetPtr ds = file_label_dataset(folder.files, folder.labels);
  if (o.shuffle) ds = ds->shuffle(std::max<int64_t>(o.batch_size, 1) * 8, seed);
  const LabelMode labels = o.labels;
  const int channels = o.channels;
  const int64_t h = o.image_height, w = o.image_width;
  const ResizeMethod method = o.interpolation;
  ds = ds->map(
      [labels, channels, h, w, method, num_classes](Element e) {
        const std::string path = tensor_bytes(e[0], "image path");
        Tensor image = read_image_file(path, {.channels = channels});
        image = resize_image(image, h, w, method);
        if (image.dtype() != DType::kF32) image = image.cast(DType::kF32);
        const auto label = static_cast<int64_t>(e[1].get(0));
        switch (labels) {
          case LabelMode::kInt:
            return Element{image, Tensor::scalar(DType::kI32, static_cast<double>(label))};
          case LabelMode::kCategorical: {
            Tensor one_hot(DType::kF32, Shape{num_classes});
            one_hot.data<float>()[label] = 1.0f;
            return Element{image, one_hot};
          }
          case LabelMode::kBinary:
            return Element{image, Tensor::full(DType::kF32, Shape{1}, static_cast<double>(label))};
          case LabelMode::kNone:
            break;
        }
        return Element{image};
      },
      {.num_parallel_calls = o.num_parallel_calls});
  if (o.batch_size > 0) ds = ds->batch(o.batch_size);
  ds = ds->prefetch(kAutotune);
  return {ds, std::move(folder.class_names), std::move(folder.files), std::move(folder.labels)};
}

}  // namespace tern::data
