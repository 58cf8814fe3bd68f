// JPEG decoding and encoding through libjpeg-turbo. libjpeg reports fatal errors by calling
// error_exit, which must not return; ours longjmps back into run_decode / run_encode. Those two
// functions hold only C data (the libjpeg structs live in the job the caller owns), so the jump
// skips no destructor; the C++ wrappers turn the recorded message into a tern::Error.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

namespace tern::data {
namespace {

// A progressive JPEG may hold any number of scans, each a pass over the whole image; crafted
// files use that to make decoding take minutes (libjpeg-turbo's advice: cap the scan count).
constexpr int kMaxProgressiveScans = 1000;

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int warnings;
  char first_warning[JMSG_LENGTH_MAX];
};

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Level -1 is a warning (corrupt or truncated data); higher levels are traces.
void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (err->warnings++ == 0) cinfo->err->format_message(cinfo, err->first_warning);
}

void on_output_message(j_common_ptr) {}

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->input_scan_number > kMaxProgressiveScans) {
    auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "more than %d progressive scans",
                  kMaxProgressiveScans);
    std::longjmp(err->jump, 1);
  }
}

void install_error_manager(JpegErrorManager* err) {
  jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error_exit;
  err->pub.emit_message = on_emit_message;
  err->pub.output_message = on_output_message;
  err->message[0] = '\0';
  err->warnings = 0;
  err->first_warning[0] = '\0';
}

// Allocates the output [h, w, c] in C++ land; returns nullptr if that failed.
using AllocateFn = unsigned char* (*)(void* ctx, int64_t h, int64_t w, int c) noexcept;

enum class Status { kOk, kError, kTooLarge, kAllocFailed, kImplausible };

constexpr int64_t kMaxBlocksPerByte = 1024;

struct DecodeJob {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  jpeg_progress_mgr progress;
  const unsigned char* data;
  size_t size;
  int channels;  // wanted, 0: as stored
  int64_t max_bytes;
  bool header_only;
  AllocateFn allocate;
  void* allocate_ctx;
  // Results.
  int64_t height, width;
  int stored_channels;
  int out_channels;  // of the allocated buffer (4 for CMYK, converted afterwards)
  bool cmyk;
};

// Everything between setjmp and a longjmp is C data: no destructors are skipped.
Status run_decode(DecodeJob* job) {
  jpeg_decompress_struct* cinfo = &job->cinfo;
  install_error_manager(&job->err);
  cinfo->err = &job->err.pub;
  if (setjmp(job->err.jump)) {
    jpeg_destroy_decompress(cinfo);
    return Status::kError;
  }
  jpeg_create_decompress(cinfo);
  job->progress.progress_monitor = on_progress;
  cinfo->progress = &job->progress;
  jpeg_mem_src(cinfo, job->data, static_cast<unsigned long>(job->size));
  jpeg_read_header(cinfo, TRUE);
  job->height = cinfo->image_height;
  job->width = cinfo->image_width;
  job->cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  job->stored_channels = cinfo->jpeg_color_space == JCS_GRAYSCALE ? 1 : 3;
  if (job->header_only) {
    jpeg_destroy_decompress(cinfo);
    return Status::kOk;
  }
  const int want = job->channels != 0 ? job->channels : job->stored_channels;
  if (job->cmyk) {
    cinfo->out_color_space = JCS_CMYK;
  } else {
    cinfo->out_color_space = want == 1 ? JCS_GRAYSCALE : want == 3 ? JCS_RGB : JCS_EXT_RGBA;
  }
  job->out_channels = job->cmyk ? 4 : want;
  const int64_t pixels = job->height * job->width;  // each < 2^16 per the JPEG header
  if (pixels * job->out_channels > job->max_bytes) {
    jpeg_destroy_decompress(cinfo);
    return Status::kTooLarge;
  }
  // Every 8x8 block of the full-resolution component codes at least its DC coefficient (one bit
  // or more with Huffman coding, far less than a byte per 1024 blocks with arithmetic coding), so
  // a file with fewer bytes cannot hold the image its header claims: refused before the output is
  // allocated (bad-input report F11: a 746-byte JPEG whose SOF said 18000x18000 took 943 MB).
  const int64_t blocks = ((job->height + 7) / 8) * ((job->width + 7) / 8);
  if (blocks > kMaxBlocksPerByte * static_cast<int64_t>(job->size)) {
    jpeg_destroy_decompress(cinfo);
    return Status::kImplausible;
  }
  unsigned char* out = job->allocate(job->allocate_ctx, job->height, job->width, job->out_channels);
  if (out == nullptr) {
    jpeg_destroy_decompress(cinfo);
    return Status::kAllocFailed;
  }
  jpeg_start_decompress(cinfo);
  const size_t stride = static_cast<size_t>(cinfo->output_width) * cinfo->output_components;
  JSAMPROW rows[16];
  while (cinfo->output_scanline < cinfo->output_height) {
    const JDIMENSION first = cinfo->output_scanline;
    JDIMENSION n = cinfo->output_height - first;
    if (n > 16) n = 16;
    for (JDIMENSION i = 0; i < n; ++i) rows[i] = out + (first + i) * stride;
    jpeg_read_scanlines(cinfo, rows, n);
  }
  jpeg_finish_decompress(cinfo);
  jpeg_destroy_decompress(cinfo);
  return Status::kOk;
}

struct EncodeJob {
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  const unsigned char* pixels;
  int64_t height, width;
  int channels, quality;
  unsigned char* out;  // malloc'ed by jpeg_mem_dest; the caller frees it
  unsigned long out_size;
};

Status run_encode(EncodeJob* job) {
  jpeg_compress_struct* cinfo = &job->cinfo;
  install_error_manager(&job->err);
  cinfo->err = &job->err.pub;
  if (setjmp(job->err.jump)) {
    jpeg_destroy_compress(cinfo);
    return Status::kError;
  }
  jpeg_create_compress(cinfo);
  jpeg_mem_dest(cinfo, &job->out, &job->out_size);
  cinfo->image_width = static_cast<JDIMENSION>(job->width);
  cinfo->image_height = static_cast<JDIMENSION>(job->height);
  cinfo->input_components = job->channels;
  cinfo->in_color_space = job->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, job->quality, TRUE);
  jpeg_start_compress(cinfo, TRUE);
  const size_t stride = static_cast<size_t>(job->width) * job->channels;
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<unsigned char*>(job->pixels + cinfo->next_scanline * stride);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  jpeg_destroy_compress(cinfo);
  return Status::kOk;
}

unsigned char* allocate_tensor(void* ctx, int64_t h, int64_t w, int c) noexcept {
  try {
    auto* t = static_cast<Tensor*>(ctx);
    *t = Tensor(DType::kU8, Shape{h, w, c});
    return t->data<uint8_t>();
  } catch (...) {
    return nullptr;
  }
}

// Adobe CMYK JPEGs store inverted ink values: R = C * K / 255 and so on.
Tensor cmyk_to(const Tensor& cmyk, int channels) {
  const int64_t h = cmyk.shape().dim(0), w = cmyk.shape().dim(1);
  Tensor out(DType::kU8, Shape{h, w, channels});
  const uint8_t* s = cmyk.data<uint8_t>();
  uint8_t* d = out.data<uint8_t>();
  for (int64_t i = 0; i < h * w; ++i, s += 4, d += channels) {
    const int k = s[3];
    const int r = s[0] * k / 255, g = s[1] * k / 255, b = s[2] * k / 255;
    if (channels == 1) {
      d[0] = static_cast<uint8_t>((r * 299 + g * 587 + b * 114 + 500) / 1000);
    } else {
      d[0] = static_cast<uint8_t>(r);
      d[1] = static_cast<uint8_t>(g);
      d[2] = static_cast<uint8_t>(b);
      if (channels == 4) d[3] = 255;
    }
  }
  return out;
}

}  // namespace

Tensor decode_jpeg(std::string_view bytes, const DecodeImageOptions& options,
                   std::string_view what) {
  TERN_CHECK_ARG(options.channels == 0 || options.channels == 1 || options.channels == 3 ||
                     options.channels == 4,
                 "decode_jpeg: channels must be 0, 1, 3 or 4, got ", options.channels);
  Tensor out;
  DecodeJob job{};
  job.data = reinterpret_cast<const unsigned char*>(bytes.data());
  job.size = bytes.size();
  job.channels = options.channels;
  job.max_bytes = options.max_bytes;
  job.allocate = allocate_tensor;
  job.allocate_ctx = &out;
  switch (run_decode(&job)) {
    case Status::kOk:
      break;
    case Status::kError:
      throw_error(ErrorCode::kDataLoss, what, ": corrupt JPEG (", job.err.message, ")");
    case Status::kTooLarge:
      throw_error(ErrorCode::kResourceExhausted, what, ": JPEG of ", job.height, "x", job.width,
                  "x", job.out_channels, " exceeds the decode limit of ", options.max_bytes,
                  " bytes");
    case Status::kAllocFailed:
      throw_error(ErrorCode::kResourceExhausted, what, ": cannot allocate a ", job.height, "x",
                  job.width, "x", job.out_channels, " image");
    case Status::kImplausible:
      throw_error(ErrorCode::kDataLoss, what, ": corrupt JPEG (its header claims ", job.height, "x",
                  job.width, " pixels, more than ", bytes.size(), " bytes can code)");
  }
  if (job.err.warnings > 0 && !options.tolerate_corrupt) {
    throw_error(ErrorCode::kDataLoss, what, ": corrupt or truncated JPEG data (",
                job.err.first_warning, ")");
  }
  if (job.cmyk) return cmyk_to(out, options.channels != 0 ? options.channels : 3);
  return out;
}

ImageInfo read_jpeg_info(std::string_view bytes, std::string_view what) {
  DecodeJob job{};
  job.data = reinterpret_cast<const unsigned char*>(bytes.data());
  job.size = bytes.size();
  job.header_only = true;
  if (run_decode(&job) != Status::kOk) {
    throw_error(ErrorCode::kDataLoss, what, ": corrupt JPEG header (", job.err.message, ")");
  }
  return {ImageFormat::kJpeg, job.height, job.width, job.stored_channels};
}

std::string encode_jpeg(const Tensor& image, int quality) {
  TERN_CHECK_ARG(
      image.defined() && image.dtype() == DType::kU8 && (image.rank() == 2 || image.rank() == 3),
      "encode_jpeg: expected a u8 [H, W, C] image, got ",
      image.defined() ? image.type().to_string() : "undefined");
  const int channels = image.rank() == 2 ? 1 : static_cast<int>(image.shape().dim(2));
  TERN_CHECK_ARG(channels == 1 || channels == 3, "encode_jpeg: channels must be 1 or 3, got ",
                 channels);
  TERN_CHECK_ARG(quality >= 1 && quality <= 100, "encode_jpeg: quality must be in [1, 100], got ",
                 quality);
  const int64_t h = image.shape().dim(0), w = image.shape().dim(1);
  TERN_CHECK_ARG(h >= 1 && w >= 1 && h <= 65500 && w <= 65500, "encode_jpeg: image size ", h, "x",
                 w, " outside [1, 65500]");
  EncodeJob job{};
  job.pixels = image.data<uint8_t>();
  job.height = h;
  job.width = w;
  job.channels = channels;
  job.quality = quality;
  const Status status = run_encode(&job);
  std::string out;
  if (status == Status::kOk) out.assign(reinterpret_cast<const char*>(job.out), job.out_size);
  std::free(job.out);
  if (status != Status::kOk) {
    throw_error(ErrorCode::kInternal, "encode_jpeg: libjpeg failed (", job.err.message, ")");
  }
  return out;
}

}  // namespace tern::data
