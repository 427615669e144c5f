// Flow Cytometry Standard 3.0 / 3.1 list-mode files: one channel's events become a histogram.
// (FCS 3.1: Spidlen et al., Cytometry A 77A, 2010.) docs/prolif.md, "FCS files", says what is
// read and how the histogram is built.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "core/input.hpp"
#include "core/text.hpp"
#include "simkit/core/error.hpp"
#include "simkit/prolif/io.hpp"

namespace simkit::prolif {

namespace {

constexpr std::size_t kExactValues = 65536;  // more distinct values than this: logarithmic bins
constexpr double kBinsPerDecade = 256;

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Header {
  std::string version;
  std::uint64_t text_begin = 0, text_end = 0, data_begin = 0, data_end = 0;
};

class FcsFile {
 public:
  FcsFile(const std::filesystem::path& path) : file_(path.string()) {
    data_ = read_whole_file(path, file_);
    parse_header();
    parse_text();
  }

  UserError error(std::string_view field, const std::string& problem) const {
    return input_error(file_, 0, field, problem);
  }

  const std::string& file() const { return file_; }
  std::string keyword(const std::string& key) const {
    const auto it = text_.find(upper(key));
    return it == text_.end() ? std::string() : it->second;
  }
  bool has(const std::string& key) const { return text_.count(upper(key)) > 0; }

  std::uint64_t integer(const std::string& key) const {
    const std::string raw = keyword(key);
    const std::string v(text::trim(raw));
    const auto n = text::parse_number<std::uint64_t>(v);
    if (!n.ok()) throw error(key, fmt::format("expected a non-negative integer, got '{}'", v));
    return n.value;
  }
  double real(const std::string& key) const {
    const std::string v(text::trim(keyword(key)));
    const auto x = text::parse<double>(v);
    if (!x || !std::isfinite(*x)) throw error(key, fmt::format("expected a number, got '{}'", v));
    return *x;
  }

  // Every event's value of channel p (1-based), decoded per $PnE / $PnG unless raw.
  std::vector<double> channel(int p, bool raw) const {
    const std::string pn = fmt::format("$P{}", p);
    const std::uint64_t bits = integer(pn + "B");
    std::vector<double> out(events_);
    const char type = datatype_;
    if ((type == 'F' && bits != 32) || (type == 'D' && bits != 64))
      throw error(pn + "B", fmt::format("{} bits for $DATATYPE {}", bits, type));
    const double range = has(pn + "R") ? real(pn + "R") : 0.0;
    double f1 = 0, f2 = 0;
    if (has(pn + "E")) {
      const std::string e = keyword(pn + "E");
      const std::size_t comma = e.find(',');
      const auto a = text::parse<double>(text::trim(e.substr(0, comma)));
      const auto b = comma == std::string::npos ? std::optional<double>() : text::parse<double>(text::trim(e.substr(comma + 1)));
      if (!a || !b || !std::isfinite(*a) || !std::isfinite(*b) || *a < 0 || *b < 0)
        throw error(pn + "E", fmt::format("expected 'f1,f2' (decades, offset), got '{}'", e));
      f1 = *a;
      f2 = *b;
    }
    const double gain = has(pn + "G") ? real(pn + "G") : 1.0;
    if (!(gain > 0)) throw error(pn + "G", "the gain must be > 0");
    if (f1 > 0 && !(range > 0)) throw error(pn + "R", "a logarithmic channel needs its range $PnR > 0");
    // Integer data are masked to the bits the range needs (FCS 3.1, 3.3.40).
    std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << bits) - 1);
    if (type == 'I' && range > 1 && range <= 1.8e19) {
      const auto needed = static_cast<int>(std::ceil(std::log2(range)));
      if (needed < 64) mask &= (std::uint64_t{1} << needed) - 1;
    }
    const std::size_t offset = offsets_[static_cast<std::size_t>(p - 1)];
    for (std::uint64_t e = 0; e < events_; ++e) {
      const unsigned char* at = reinterpret_cast<const unsigned char*>(data_.data()) + data_begin_ + e * event_bytes_ + offset;
      double x = 0;
      if (type == 'I') {
        std::uint64_t v = 0;
        const std::size_t nbytes = bits / 8;
        for (std::size_t k = 0; k < nbytes; ++k) {
          const std::size_t byte = little_ ? k : nbytes - 1 - k;
          v |= static_cast<std::uint64_t>(at[byte]) << (8 * k);
        }
        x = static_cast<double>(v & mask);
      } else {
        unsigned char b[8];
        const std::size_t n = type == 'F' ? 4 : 8;
        for (std::size_t k = 0; k < n; ++k) b[k] = at[little_ ? k : n - 1 - k];
        if (type == 'F') {
          float f;
          std::memcpy(&f, b, 4);
          x = f;
        } else {
          std::memcpy(&x, b, 8);
        }
      }
      if (!raw) {
        if (f1 > 0) {
          // Log amplification: 10^(f1 x / range) * f2 (f2 = 0 written by old instruments means 1).
          x = (f2 > 0 ? f2 : 1.0) * std::pow(10.0, f1 * x / range);
        } else {
          x /= gain;
        }
      }
      out[e] = x;
    }
    return out;
  }

  int parameters() const { return parameters_; }
  std::string name(int p) const { return std::string(text::trim(keyword(fmt::format("$P{}N", p)))); }
  std::string label(int p) const { return std::string(text::trim(keyword(fmt::format("$P{}S", p)))); }

  void prepare_data() {
    parameters_ = static_cast<int>(integer("$PAR"));
    if (integer("$PAR") < 1 || integer("$PAR") > 100000)
      throw error("$PAR", fmt::format("{} parameters", integer("$PAR")));
    events_ = integer("$TOT");
    const std::string mode = upper(std::string(text::trim(keyword("$MODE"))));
    if (!mode.empty() && mode != "L")
      throw error("$MODE", fmt::format("'{}': only list mode (L) data are supported", mode));
    const std::string type = upper(std::string(text::trim(keyword("$DATATYPE"))));
    if (type != "I" && type != "F" && type != "D")
      throw error("$DATATYPE", fmt::format("'{}': supported are I (integers), F (32-bit floats), D (64-bit floats)", type));
    datatype_ = type[0];
    const std::string order(text::trim(keyword("$BYTEORD")));
    if (order == "1,2,3,4" || order == "1,2" || order == "1" || order == "1,2,3,4,5,6,7,8") {
      little_ = true;
    } else if (order == "4,3,2,1" || order == "2,1" || order == "8,7,6,5,4,3,2,1") {
      little_ = false;
    } else {
      throw error("$BYTEORD", fmt::format("'{}': expected 1,2,3,4 or 4,3,2,1", order));
    }
    std::size_t offset = 0;
    for (int p = 1; p <= parameters_; ++p) {
      const std::uint64_t bits = integer(fmt::format("$P{}B", p));
      if (bits == 0 || bits % 8 != 0 || bits > 64)
        throw error(fmt::format("$P{}B", p), fmt::format("{} bits: supported are whole bytes up to 64", bits));
      offsets_.push_back(offset);
      offset += bits / 8;
    }
    event_bytes_ = offset;
    // DATA offsets: the header's, or $BEGINDATA / $ENDDATA when the header holds 0 (large files).
    std::uint64_t begin = header_.data_begin, end = header_.data_end;
    if (begin == 0 && end == 0) {
      begin = integer("$BEGINDATA");
      end = integer("$ENDDATA");
    }
    const std::uint64_t need = events_ > std::numeric_limits<std::uint64_t>::max() / event_bytes_
                                   ? std::numeric_limits<std::uint64_t>::max()
                                   : events_ * event_bytes_;
    if (events_ > 0 && (end < begin || end >= data_.size() || end - begin + 1 < need))
      throw error("$TOT", fmt::format("{} events of {} bytes need {} bytes of DATA, the file has {} (truncated or "
                                      "inconsistent file)",
                                      events_, event_bytes_, need, end >= begin ? end - begin + 1 : 0));
    data_begin_ = begin;
  }

  std::uint64_t events() const { return events_; }
  const std::string& version() const { return header_.version; }

 private:
  std::string file_, data_;
  Header header_;
  std::map<std::string, std::string> text_;
  int parameters_ = 0;
  std::uint64_t events_ = 0, data_begin_ = 0;
  std::size_t event_bytes_ = 0;
  std::vector<std::size_t> offsets_;
  char datatype_ = 'I';
  bool little_ = true;

  std::uint64_t header_number(std::size_t at) const {
    const std::string field(text::trim(std::string_view(data_).substr(at, 8)));
    if (field.empty()) return 0;
    const auto v = text::parse_number<std::uint64_t>(field);
    if (!v.ok()) throw error("HEADER", fmt::format("byte {}: expected an offset, got '{}'", at, field));
    return v.value;
  }

  void parse_header() {
    if (data_.size() < 58 || data_.compare(0, 3, "FCS") != 0)
      throw error("HEADER", "not an FCS file (it does not start with 'FCS3.0' or 'FCS3.1')");
    header_.version = data_.substr(0, 6);
    if (header_.version != "FCS3.0" && header_.version != "FCS3.1")
      throw error("HEADER", fmt::format("version '{}': simkit reads FCS3.0 and FCS3.1", header_.version));
    header_.text_begin = header_number(10);
    header_.text_end = header_number(18);
    header_.data_begin = header_number(26);
    header_.data_end = header_number(34);
    if (header_.text_begin < 58 || header_.text_end <= header_.text_begin || header_.text_end >= data_.size())
      throw error("HEADER", fmt::format("TEXT segment {}..{} lies outside the file of {} bytes", header_.text_begin,
                                        header_.text_end, data_.size()));
  }

  // Keyword/value pairs separated by the delimiter (the TEXT segment's first byte); a doubled
  // delimiter inside a keyword or value stands for the character itself.
  void parse_text() {
    const char delim = data_[header_.text_begin];
    std::vector<std::string> tokens;
    std::string current;
    const std::size_t end = header_.text_end;
    for (std::size_t k = header_.text_begin + 1; k <= end; ++k) {
      const char c = data_[k];
      if (c == delim) {
        if (k + 1 <= end && data_[k + 1] == delim && k + 1 != end) {
          current += delim;
          ++k;
          continue;
        }
        tokens.push_back(current);
        current.clear();
      } else {
        current += c;
      }
    }
    if (!current.empty()) tokens.push_back(current);
    for (std::size_t k = 0; k + 1 < tokens.size(); k += 2) text_[upper(std::string(text::trim(tokens[k])))] = tokens[k + 1];
    if (!has("$PAR") || !has("$TOT") || !has("$DATATYPE") || !has("$BYTEORD"))
      throw error("TEXT", "a required keyword ($PAR, $TOT, $DATATYPE, $BYTEORD) is missing (not an FCS 3 list-mode file?)");
  }
};

int find_channel(const FcsFile& f, const std::string& wanted, const std::string& flag) {
  std::vector<int> exact, loose;
  for (int p = 1; p <= f.parameters(); ++p) {
    if (f.name(p) == wanted || f.label(p) == wanted) exact.push_back(p);
    if (upper(f.name(p)) == upper(wanted) || upper(f.label(p)) == upper(wanted)) loose.push_back(p);
  }
  const std::vector<int>& hits = exact.empty() ? loose : exact;
  if (hits.size() == 1) return hits[0];
  std::string names;
  for (int p = 1; p <= f.parameters(); ++p) {
    if (!names.empty()) names += ", ";
    names += f.name(p);
    if (!f.label(p).empty()) names += " (" + f.label(p) + ")";
  }
  if (hits.empty())
    throw f.error(flag, fmt::format("no channel named '{}' ($PnN or $PnS); the file has {}", wanted, names));
  throw f.error(flag, fmt::format("'{}' names {} channels; give the $PnN name: {}", wanted, hits.size(), names));
}

}  // namespace

bool is_fcs_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[3] = {};
  in.read(magic, 3);
  return in.gcount() == 3 && std::memcmp(magic, "FCS", 3) == 0;
}

InitialHistogram read_fcs_histogram(const std::filesystem::path& path, const FcsOptions& options) {
  FcsFile f(path);
  f.prepare_data();
  if (options.channel.empty()) {
    std::string names;
    for (int p = 1; p <= f.parameters(); ++p) names += (p > 1 ? ", " : "") + f.name(p);
    throw f.error("channel", fmt::format("an FCS file needs the channel to read (--channel NAME); the file has {}", names));
  }
  const int channel = find_channel(f, options.channel, "channel");
  const std::vector<double> values = f.channel(channel, options.raw);
  std::vector<char> keep(values.size(), 1);
  if (options.gate) {
    if (options.gate->channel.empty()) throw f.error("gate", "the gate's channel name is empty");
    const int g = find_channel(f, options.gate->channel, "gate");
    const std::vector<double> gv = f.channel(g, options.raw);
    for (std::size_t e = 0; e < gv.size(); ++e)
      keep[e] = gv[e] >= options.gate->min && gv[e] <= options.gate->max ? 1 : 0;
  }
  std::map<double, std::uint64_t> exact;
  double lo = std::numeric_limits<double>::infinity();
  for (std::size_t e = 0; e < values.size(); ++e) {
    if (!keep[e]) continue;
    const double v = values[e];
    if (!(v > 0) || !std::isfinite(v)) continue;  // a histogram value must be > 0 (docs/prolif.md)
    ++exact[v];
    lo = std::min(lo, v);
  }
  InitialHistogram h;
  h.source = fmt::format("{}[{}]", f.file(), f.name(channel));
  if (exact.empty())
    throw f.error("channel", fmt::format("channel {} has no event with a value > 0{}", f.name(channel),
                                         options.gate ? " inside the gate" : ""));
  if (exact.size() <= kExactValues) {
    for (const auto& [v, c] : exact) {
      h.values.push_back(v);
      h.counts.push_back(c);
    }
  } else {
    // Logarithmic bins of 1/256 decade from the smallest value, each at its geometric centre.
    std::map<long long, std::uint64_t> bins;
    for (const auto& [v, c] : exact) bins[static_cast<long long>(std::floor(kBinsPerDecade * std::log10(v / lo)))] += c;
    for (const auto& [b, c] : bins) {
      h.values.push_back(lo * std::pow(10.0, (static_cast<double>(b) + 0.5) / kBinsPerDecade));
      h.counts.push_back(c);
    }
  }
  return h;
}

InitialHistogram read_histogram(const std::filesystem::path& path, const FcsOptions& fcs) {
  if (is_fcs_file(path)) return read_fcs_histogram(path, fcs);
  return read_histogram(path);
}

}  // namespace simkit::prolif
