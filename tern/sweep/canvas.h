// A small RGB raster for the sweep report's plot: pixels, lines, filled rectangles and disks, and
// text in a 5x7 bitmap font (digits, letters shown upper-case, common punctuation; anything else
// as '?'), encoded as PNG through tern/data's libpng writer. Drawing outside the canvas is clipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::sweep {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb at(int x, int y) const;  // background outside

  void pixel(int x, int y, Rgb c);
  void line(int x0, int y0, int x1, int y1, Rgb c);  // Bresenham, both ends included
  void fill_rect(int x, int y, int w, int h, Rgb c);
  void dot(int cx, int cy, int radius, Rgb c);  // a filled disk
  // Top-left at (x, y); each glyph 5x7 pixels times `scale`, advancing 6 * scale.
  void text(int x, int y, std::string_view s, Rgb c, int scale = 1);
  static int text_width(std::string_view s, int scale = 1) {
    return s.empty() ? 0 : static_cast<int>(s.size()) * 6 * scale - scale;
  }

  std::string encode_png() const;

 private:
  int width_, height_;
  Rgb background_;
  std::vector<uint8_t> rgb_;  // row-major, 3 bytes a pixel
};

// The 7 rows (5 low bits each, bit 4 = leftmost column) of a glyph.
const uint8_t* glyph_5x7(char c);

}  // namespace tern::sweep
