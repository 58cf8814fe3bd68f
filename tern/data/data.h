// tern::data, the input pipeline: include this for every source and the Iterator.
#pragma once

#include "tern/data/csv_dataset.h"
#include "tern/data/dataset.h"
#include "tern/data/element.h"
#include "tern/data/example_dataset.h"
#include "tern/data/generator_dataset.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_augment.h"
#include "tern/data/image_folder.h"
#include "tern/data/iterator.h"
#include "tern/data/list_files_dataset.h"
#include "tern/data/range_dataset.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/data/tfrecord_dataset.h"
#include "tern/data/tfrecord_writer.h"
