// tern's help layout for every command (a CLI11 formatter), the shared failure message, parse()
// with tern's exit statuses, and describe mode for `tern completion`.
#include "tools/tern/cli_parse.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace tern::tools {
namespace {

constexpr size_t kWidth = 80;       // help text wraps here
constexpr size_t kNameColumn = 28;  // descriptions start here

const Describer* g_describer = nullptr;

std::string upper(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return s;
}

// Words of `text` wrapped to lines of at most `width - indent` characters, each line indented.
std::string wrap(const std::string& text, size_t indent, size_t first_indent) {
  std::string out, line;
  size_t line_indent = first_indent;
  std::istringstream words(text);
  std::string word;
  auto flush = [&] {
    out += std::string(line_indent, ' ') + line + "\n";
    line.clear();
    line_indent = indent;
  };
  while (words >> word) {
    if (!line.empty() && line_indent + line.size() + 1 + word.size() > kWidth) flush();
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) flush();
  return out;
}

// A paragraph block: lines that start with spaces are kept as written, the others wrapped.
std::string paragraphs(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  std::string l;
  while (std::getline(lines, l)) {
    out += !l.empty() && l[0] == ' ' ? l + "\n" : wrap(l, 0, 0);
  }
  return out;
}

// "CONFIG", "--set KEY=VALUE", "-n, --records N", "--quiet".
std::string option_label(const CLI::Option* opt) {
  if (opt->get_positional()) return upper(opt->get_name(true));
  std::string label;
  for (const auto& s : opt->get_snames()) label += "-" + s + ", ";
  for (const auto& l : opt->get_lnames()) label += "--" + l + ", ";
  label.resize(label.size() - 2);
  if (opt->get_expected_max() == 0) return label;  // a flag
  std::string meta = opt->get_option_text();
  if (meta.empty()) {
    meta = opt->get_type_name();
    meta = meta.substr(0, meta.find(':'));
    if (meta.empty() || meta == "TEXT") meta = "VALUE";
    if (meta == "INT" || meta == "UINT") meta = "N";
    if (meta == "FLOAT") meta = "X";
  }
  return label + " " + meta;
}

std::string option_line(const std::string& label, const std::string& description) {
  std::string body = wrap(description, kNameColumn, kNameColumn);
  if (label.size() + 2 + 2 > kNameColumn) return "  " + label + "\n" + body;
  std::string head = "  " + label;
  head.resize(kNameColumn, ' ');
  return body.empty() ? head + "\n" : head + body.substr(kNameColumn);
}

class TernFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode) const override {
    std::string out = usage_line(app, name) + "\n\n";
    if (!app->get_description().empty()) out += paragraphs(app->get_description()) + "\n";
    std::vector<const CLI::Option*> positionals =
        app->get_options([](const CLI::Option* o) { return o->get_positional(); });
    if (!positionals.empty()) {
      out += "arguments:\n";
      for (const CLI::Option* o : positionals)
        out += option_line(option_label(o), o->get_description());
      out += "\n";
    }
    std::vector<const CLI::Option*> options = app->get_options(
        [](const CLI::Option* o) { return !o->get_positional() && !o->get_lnames().empty(); });
    // --help last, after the command's own options.
    std::stable_partition(options.begin(), options.end(),
                          [&](const CLI::Option* o) { return o != app->get_help_ptr(); });
    out += "options:\n";
    for (const CLI::Option* o : options) {
      out += option_line(option_label(o), o == app->get_help_ptr() ? "show this help and exit"
                                                                   : o->get_description());
    }
    std::vector<const CLI::App*> subs = app->get_subcommands([](const CLI::App*) { return true; });
    if (!subs.empty()) {
      out += "\ncommands:\n";
      for (const CLI::App* s : subs) out += option_line(s->get_name(), s->get_description());
      out += "\n" + wrap(str_cat("'", name, " COMMAND --help' describes one."), 0, 0);
    }
    if (!app->get_footer().empty()) out += "\n" + paragraphs(app->get_footer());
    out += "\n" + wrap(
                      "exit status: 0 done, 1 error, 2 usage error (a bad flag, argument or "
                      "config key)",
                      0, 0);
    return out;
  }

  static std::string usage_line(const CLI::App* app, const std::string& name) {
    std::string line = "usage: " + name;
    if (!app->get_subcommands([](const CLI::App*) { return true; }).empty()) {
      return line + " COMMAND [options]";
    }
    line += " [options]";
    for (const CLI::Option* o :
         app->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      std::string n = upper(o->get_name(true));
      if (o->get_items_expected_max() > 1) n += "...";
      line += o->get_required() ? " " + n : " [" + n + "]";
    }
    return line;
  }
};

// "tern train: config is required" + the usage line and where to read more.
std::string failure_message(const CLI::App* app, const CLI::Error& e) {
  std::string name = app->get_name();
  for (const CLI::App* p = app->get_parent(); p; p = p->get_parent())
    name = p->get_name() + " " + name;
  return str_cat(name, ": ", e.what(), "\n", TernFormatter::usage_line(app, name), "\n'", name,
                 " --help' describes every option.\n");
}

}  // namespace

void init_app(CLI::App& app) {
  app.formatter(std::make_shared<TernFormatter>());
  app.failure_message(failure_message);
}

int parse(CLI::App& app, int argc, char** argv) {
  if (g_describer) {
    (*g_describer)(app);
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (104 conversion, 105 validation, 106 required, 109 extras, ...) are all
    // usage errors to a caller.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return -1;
}

void set_describer(const Describer* describer) {
  g_describer = describer;
}

std::string help_text(const CLI::App& app) {
  return app.help();
}

}  // namespace tern::tools
