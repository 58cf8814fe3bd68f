// TFRecordWriter: frames each record (tern/format/tfrecord_frame.h) into an output stream.
#include "tern/data/tfrecord_writer.h"

#include "tern/format/tfrecord_frame.h"

namespace tern::data {

TFRecordWriter::TFRecordWriter(const std::string& path, Compression compression)
    : out_(OutputStream::create(path, compression)) {}

void TFRecordWriter::write(std::string_view record) {
  out_->write(format::tfrecord_header(record.size()));
  out_->write(record);
  out_->write(format::tfrecord_footer(record));
  ++records_;
}

}  // namespace tern::data
