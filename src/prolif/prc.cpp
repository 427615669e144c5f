// ProCell project files: a small pickle reader (no Python, no code run: globals are names only)
// and a protocol-0 writer. Protocol 0 is what ProCell's shipped models use (Python 2); Python 3's
// ProCell writes protocols 3-4, whose binary opcodes are read as well.
#include "simkit/prolif/prc.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include "core/input.hpp"
#include "core/text.hpp"
#include "simkit/core/error.hpp"

namespace simkit::prolif {

namespace {

struct Obj;
using Ref = std::shared_ptr<Obj>;

struct Obj {
  enum class T { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Global, Call, Mark } t = T::None;
  bool b = false;
  long long i = 0;
  double f = 0;
  std::string s;  // Str (UTF-8), Bytes, Global ("module.name")
  std::vector<Ref> items;
  std::vector<std::pair<Ref, Ref>> dict;
  Ref callable, args, state;  // Call: callable(*args), then BUILD's state

  Obj() = default;
  Obj(const Obj&) = delete;
  Obj& operator=(const Obj&) = delete;
  // Frees the children with a work list, not by recursion: a hostile file may nest 10^6 deep.
  ~Obj() {
    std::vector<std::shared_ptr<Obj>> work;
    const auto take = [&work](Obj& o) {
      for (auto& r : o.items) work.push_back(std::move(r));
      for (auto& [k, v] : o.dict) {
        work.push_back(std::move(k));
        work.push_back(std::move(v));
      }
      for (auto* r : {&o.callable, &o.args, &o.state}) work.push_back(std::move(*r));
    };
    take(*this);
    while (!work.empty()) {
      std::shared_ptr<Obj> r = std::move(work.back());
      work.pop_back();
      if (r && r.use_count() == 1) take(*r);
    }
  }
};

// Every object made while an Unpickler reads is also kept in its registry: a pickle can build
// reference cycles (a list appended to itself through the memo), which shared_ptr alone would leak;
// the Unpickler's destructor cuts every object's links before releasing them.
thread_local std::vector<std::shared_ptr<Obj>>* g_registry = nullptr;

Ref make(Obj::T t) {
  auto o = std::make_shared<Obj>();
  o->t = t;
  if (g_registry) g_registry->push_back(o);
  return o;
}

// Appends code point `cp` as UTF-8.
void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Unpickler {
 public:
  Unpickler(const std::string& data, std::string file) : d_(data), file_(std::move(file)) { g_registry = &all_; }
  ~Unpickler() {
    g_registry = nullptr;
    stack_.clear();
    memo_.clear();
    for (const Ref& o : all_) {  // no object is freed here (all_ holds each): no recursion, no cycle left
      o->items.clear();
      o->dict.clear();
      o->callable.reset();
      o->args.reset();
      o->state.reset();
    }
    all_.clear();
  }
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  Ref load() {
    while (true) {
      if (pos_ >= d_.size()) throw error("", "the pickle ends before its STOP opcode (truncated file?)");
      const auto op = static_cast<unsigned char>(d_[pos_++]);
      switch (op) {
        case '(':
          push(make(Obj::T::Mark));
          break;
        case '.':
          if (stack_.size() != 1) throw error("", "malformed pickle: the stack does not hold one object at STOP");
          return stack_.back();
        case '0':
          pop();
          break;
        case '2':
          push(top());
          break;
        case 'N':
          push(make(Obj::T::None));
          break;
        case 0x88:
        case 0x89: {
          auto o = make(Obj::T::Bool);
          o->b = op == 0x88;
          push(o);
          break;
        }
        case 'I': {
          const std::string arg = line_arg();
          if (arg == "00" || arg == "01") {
            auto o = make(Obj::T::Bool);
            o->b = arg == "01";
            push(o);
          } else {
            push(integer(arg));
          }
          break;
        }
        case 'L': {
          std::string arg = line_arg();
          if (!arg.empty() && arg.back() == 'L') arg.pop_back();
          push(integer(arg));
          break;
        }
        case 'F': {
          const std::string arg = line_arg();
          const auto v = text::parse<double>(arg);
          if (!v) throw error("", fmt::format("malformed FLOAT '{}'", arg));
          auto o = make(Obj::T::Float);
          o->f = *v;
          push(o);
          break;
        }
        case 'S':
          push(str(python_string(line_arg())));
          break;
        case 'V':
          push(str(raw_unicode(line_arg())));
          break;
        case 'c': {
          const std::string module = line_arg();
          const std::string name = line_arg();
          push(global(module, name));
          break;
        }
        case 'p':
          memo_[index(line_arg())] = top();
          break;
        case 'g':
          push(memo(index(line_arg())));
          break;
        case 't':
        case 'l': {
          auto o = make(op == 't' ? Obj::T::Tuple : Obj::T::List);
          o->items = pop_mark();
          push(o);
          break;
        }
        case ')':
          push(make(Obj::T::Tuple));
          break;
        case ']':
          push(make(Obj::T::List));
          break;
        case '}':
          push(make(Obj::T::Dict));
          break;
        case 'd': {
          auto o = make(Obj::T::Dict);
          const auto items = pop_mark();
          if (items.size() % 2) throw error("", "malformed DICT: an odd number of items");
          for (std::size_t k = 0; k < items.size(); k += 2) o->dict.emplace_back(items[k], items[k + 1]);
          push(o);
          break;
        }
        case 'a': {
          Ref v = pop();
          list(top())->items.push_back(v);
          break;
        }
        case 'e': {
          auto items = pop_mark();
          Ref l = list(top());
          l->items.insert(l->items.end(), items.begin(), items.end());
          break;
        }
        case 's': {
          Ref v = pop(), k = pop();
          dict(top())->dict.emplace_back(k, v);
          break;
        }
        case 'u': {
          auto items = pop_mark();
          if (items.size() % 2) throw error("", "malformed SETITEMS: an odd number of items");
          Ref dct = dict(top());
          for (std::size_t k = 0; k < items.size(); k += 2) dct->dict.emplace_back(items[k], items[k + 1]);
          break;
        }
        case 'R':
        case 0x81: {  // REDUCE, NEWOBJ
          Ref args = pop(), callable = pop();
          auto o = make(Obj::T::Call);
          o->callable = callable;
          o->args = args;
          push(o);
          break;
        }
        case 'b': {
          Ref st = pop();
          top()->state = st;
          break;
        }
        // --- protocols 1 to 4
        case 0x80:  // PROTO
          bytes(1);
          break;
        case 0x95:  // FRAME
          bytes(8);
          break;
        case 0x94:  // MEMOIZE
          memo_[memo_.size()] = top();
          break;
        case 'q':
          memo_[static_cast<std::size_t>(u8())] = top();
          break;
        case 'r':
          memo_[static_cast<std::size_t>(u32())] = top();
          break;
        case 'h':
          push(memo(u8()));
          break;
        case 'j':
          push(memo(u32()));
          break;
        case 'K': {
          auto o = make(Obj::T::Int);
          o->i = u8();
          push(o);
          break;
        }
        case 'M': {
          auto o = make(Obj::T::Int);
          o->i = u8();  // low byte first: the operands of | are evaluated in no set order
          o->i |= u8() << 8;
          push(o);
          break;
        }
        case 'J': {
          auto o = make(Obj::T::Int);
          o->i = static_cast<std::int32_t>(u32());
          push(o);
          break;
        }
        case 0x8a: {  // LONG1
          const std::size_t n = u8();
          const std::string raw = bytes(n);
          if (n > 8) throw error("", "an integer of more than 64 bits");
          std::uint64_t v = 0;
          for (std::size_t k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[k])) << (8 * k);
          if (n > 0 && n < 8 && (static_cast<unsigned char>(raw[n - 1]) & 0x80)) v |= ~std::uint64_t{0} << (8 * n);
          auto o = make(Obj::T::Int);
          o->i = static_cast<long long>(v);
          push(o);
          break;
        }
        case 'G': {
          const std::string raw = bytes(8);
          std::uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(raw[static_cast<std::size_t>(k)]);
          auto o = make(Obj::T::Float);
          std::memcpy(&o->f, &bits, 8);
          push(o);
          break;
        }
        case 'X':
          push(str(bytes(u32())));
          break;
        case 0x8c:
          push(str(bytes(u8())));
          break;
        case 0x8d:
          push(str(bytes(u64())));
          break;
        case 'U':
        case 'C': {
          auto o = make(op == 'U' ? Obj::T::Str : Obj::T::Bytes);
          o->s = bytes(u8());
          push(o);
          break;
        }
        case 'T':
        case 'B': {
          auto o = make(op == 'T' ? Obj::T::Str : Obj::T::Bytes);
          o->s = bytes(u32());
          push(o);
          break;
        }
        case 0x8e: {
          auto o = make(Obj::T::Bytes);
          o->s = bytes(u64());
          push(o);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          const std::size_t n = op - 0x84u;
          auto o = make(Obj::T::Tuple);
          o->items.resize(n);
          for (std::size_t k = n; k-- > 0;) o->items[k] = pop();
          push(o);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Ref name = pop(), module = pop();
          if (name->t != Obj::T::Str || module->t != Obj::T::Str) throw error("", "malformed STACK_GLOBAL");
          push(global(module->s, name->s));
          break;
        }
        default:
          throw error("", fmt::format("not a ProCell project: unsupported pickle opcode 0x{:02x} at byte {}", op,
                                      pos_ - 1));
      }
    }
  }

  std::size_t line() const { return line_; }
  UserError error(std::string_view field, const std::string& problem) const {
    return input_error(file_, line_, field, problem);
  }

 private:
  const std::string& d_;
  std::string file_;
  std::size_t pos_ = 0, line_ = 1;
  std::vector<Ref> stack_;
  std::map<std::size_t, Ref> memo_;
  std::vector<Ref> all_;  // every object made (see g_registry)

  void push(Ref o) {
    if (stack_.size() > 1000000) throw error("", "malformed pickle: the stack grows without bound");
    stack_.push_back(std::move(o));
  }
  Ref pop() {
    if (stack_.empty() || stack_.back()->t == Obj::T::Mark) throw error("", "malformed pickle: stack underflow");
    Ref o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Ref top() const {
    if (stack_.empty() || stack_.back()->t == Obj::T::Mark) throw error("", "malformed pickle: empty stack");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    std::size_t k = stack_.size();
    while (k > 0 && stack_[k - 1]->t != Obj::T::Mark) --k;
    if (k == 0) throw error("", "malformed pickle: no MARK");
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(k), stack_.end());
    stack_.resize(k - 1);
    return items;
  }
  Ref list(Ref o) const {
    if (o->t != Obj::T::List) throw error("", "malformed pickle: APPEND to something that is not a list");
    return o;
  }
  Ref dict(Ref o) const {
    if (o->t != Obj::T::Dict) throw error("", "malformed pickle: SETITEM on something that is not a dict");
    return o;
  }
  Ref memo(std::size_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) throw error("", fmt::format("malformed pickle: memo entry {} was never stored", k));
    return it->second;
  }
  std::string line_arg() {
    const std::size_t end = d_.find('\n', pos_);
    if (end == std::string::npos) throw error("", "the pickle ends inside an opcode's argument (truncated file?)");
    std::string arg = d_.substr(pos_, end - pos_);
    if (!arg.empty() && arg.back() == '\r') arg.pop_back();
    pos_ = end + 1;
    ++line_;
    return arg;
  }
  std::string bytes(std::size_t n) {
    if (n > d_.size() - pos_) throw error("", "the pickle ends inside a binary argument (truncated file?)");
    std::string out = d_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::uint32_t u8() { return static_cast<unsigned char>(bytes(1)[0]); }
  std::uint32_t u32() {
    const std::string b = bytes(4);
    std::uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(k)]);
    return v;
  }
  std::uint64_t u64() {
    const std::string b = bytes(8);
    std::uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(k)]);
    if (v > d_.size()) throw error("", "the pickle ends inside a binary argument (truncated file?)");
    return v;
  }
  std::size_t index(const std::string& arg) const {
    const auto v = text::parse_number<std::uint64_t>(arg);
    if (!v.ok()) throw error("", fmt::format("malformed memo index '{}'", arg));
    return static_cast<std::size_t>(v.value);
  }
  Ref integer(const std::string& arg) const {
    const auto v = text::parse_number<long long>(arg);
    if (!v.ok()) throw error("", fmt::format("malformed INT '{}'", arg));
    auto o = make(Obj::T::Int);
    o->i = v.value;
    return o;
  }
  static Ref str(std::string s) {
    auto o = make(Obj::T::Str);
    o->s = std::move(s);
    return o;
  }
  static Ref global(const std::string& module, const std::string& name) {
    auto o = make(Obj::T::Global);
    o->s = module + "." + name;
    return o;
  }
  // A Python 2 str literal as repr() writes it: quoted, with \\ \' \" \n \r \t \xNN escapes.
  // Bytes are taken as Latin-1 and kept as UTF-8.
  std::string python_string(const std::string& arg) const {
    if (arg.size() < 2 || (arg.front() != '\'' && arg.front() != '"') || arg.back() != arg.front())
      throw error("", fmt::format("malformed STRING {}", arg.substr(0, 40)));
    std::string out;
    for (std::size_t k = 1; k + 1 < arg.size(); ++k) {
      char c = arg[k];
      if (c == '\\' && k + 2 < arg.size()) {
        const char e = arg[++k];
        switch (e) {
          case 'n': put_utf8(out, '\n'); break;
          case 'r': put_utf8(out, '\r'); break;
          case 't': put_utf8(out, '\t'); break;
          case '\\': case '\'': case '"': put_utf8(out, static_cast<unsigned char>(e)); break;
          case 'x': {
            if (k + 2 >= arg.size() || !std::isxdigit(static_cast<unsigned char>(arg[k + 1])) ||
                !std::isxdigit(static_cast<unsigned char>(arg[k + 2])))
              throw error("", "malformed \\x escape in a STRING");
            const auto v = std::stoul(arg.substr(k + 1, 2), nullptr, 16);
            put_utf8(out, static_cast<std::uint32_t>(v));
            k += 2;
            break;
          }
          default:
            put_utf8(out, '\\');
            put_utf8(out, static_cast<unsigned char>(e));
        }
      } else {
        put_utf8(out, static_cast<unsigned char>(c));
      }
    }
    return out;
  }
  // raw-unicode-escape: \uXXXX and \UXXXXXXXX escapes, other bytes Latin-1.
  std::string raw_unicode(const std::string& arg) const {
    std::string out;
    for (std::size_t k = 0; k < arg.size(); ++k) {
      if (arg[k] == '\\' && k + 1 < arg.size() && (arg[k + 1] == 'u' || arg[k + 1] == 'U')) {
        const std::size_t n = arg[k + 1] == 'u' ? 4 : 8;
        if (k + 2 + n > arg.size()) throw error("", "malformed \\u escape in a UNICODE string");
        std::uint32_t cp = 0;
        for (std::size_t q = 0; q < n; ++q) {
          const char h = arg[k + 2 + q];
          const int v = std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                        : (h >= 'a' && h <= 'f')                    ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F')                    ? h - 'A' + 10
                                                                    : -1;
          if (v < 0) throw error("", "malformed \\u escape in a UNICODE string");
          cp = cp * 16 + static_cast<std::uint32_t>(v);
        }
        if (cp > 0x10FFFF) throw error("", "malformed \\U escape in a UNICODE string");
        put_utf8(out, cp);
        k += 1 + n;
      } else {
        put_utf8(out, static_cast<unsigned char>(arg[k]));
      }
    }
    return out;
  }
};

// --- reading the Project object

struct Fields {
  const Unpickler& up;
  std::map<std::string, Ref> attrs;

  UserError error(const std::string& field, const std::string& problem) const { return up.error(field, problem); }

  // A text value: a str, or PyQt4's QString pickled as sip._unpickle_type(module, 'QString', (text,)).
  static std::optional<std::string> text_of(const Ref& o) {
    if (o->t == Obj::T::Str) return o->s;
    if (o->t == Obj::T::Call && o->callable->t == Obj::T::Global && o->callable->s == "sip._unpickle_type" &&
        o->args->t == Obj::T::Tuple && o->args->items.size() == 3 && o->args->items[1]->t == Obj::T::Str &&
        o->args->items[1]->s == "QString" && o->args->items[2]->t == Obj::T::Tuple &&
        o->args->items[2]->items.size() == 1 && o->args->items[2]->items[0]->t == Obj::T::Str)
      return o->args->items[2]->items[0]->s;
    return std::nullopt;
  }
  static std::optional<double> number_of(const Ref& o) {
    if (o->t == Obj::T::Float) return o->f;
    if (o->t == Obj::T::Int) return static_cast<double>(o->i);
    if (o->t == Obj::T::Bool) return o->b ? 1.0 : 0.0;
    return std::nullopt;
  }
  const Ref* find(const std::string& key) const {
    const auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  }
  double number(const std::string& key, double fallback) const {
    const Ref* o = find(key);
    if (!o || (*o)->t == Obj::T::None) return fallback;
    const auto v = number_of(*o);
    if (!v || !std::isfinite(*v)) throw error(key, "expected a number");
    return *v;
  }
  bool boolean(const std::string& key, bool fallback) const {
    const Ref* o = find(key);
    if (!o || (*o)->t == Obj::T::None) return fallback;
    if ((*o)->t == Obj::T::Bool) return (*o)->b;
    if ((*o)->t == Obj::T::Int) return (*o)->i != 0;
    throw error(key, "expected True or False");
  }
  std::optional<std::string> text(const std::string& key) const {
    const Ref* o = find(key);
    if (!o || (*o)->t == Obj::T::None) return std::nullopt;
    const auto t = text_of(*o);
    if (!t) throw error(key, "expected a string");
    return t;
  }
};

}  // namespace

std::string portable_file_name(const std::string& path) {
  const std::size_t cut = path.find_last_of("/\\");
  return cut == std::string::npos ? path : path.substr(cut + 1);
}

ProcellProject read_prc(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string data = read_whole_file(path, file, kConfigFileBytes);
  Unpickler up(data, file);
  const Ref root = up.load();
  // copy_reg._reconstructor(project.Project, object, None) with the attributes as BUILD state, or
  // (protocol 2+) project.Project.__new__ via NEWOBJ.
  const bool is_project = root->t == Obj::T::Call && root->state && root->state->t == Obj::T::Dict &&
                          ((root->callable->t == Obj::T::Global && root->callable->s.ends_with("project.Project")) ||
                           (root->args->t == Obj::T::Tuple && !root->args->items.empty() &&
                            root->args->items[0]->t == Obj::T::Global &&
                            root->args->items[0]->s.ends_with(".Project")));
  if (!is_project) throw input_error(file, 0, "", "not a ProCell project: the pickle does not hold a Project object");
  Fields f{up, {}};
  for (const auto& [k, v] : root->state->dict) {
    if (k->t != Obj::T::Str) throw input_error(file, 0, "", "malformed Project: an attribute name is not a string");
    f.attrs[k->s] = v;
  }

  ProcellProject p;
  p.project_name = f.text("project_name").value_or("");
  p.initial_file = f.text("initial_file");
  p.target_file = f.text("target_file");
  p.validation_file = f.text("validation_file");
  p.simulation_time = f.number("simulation_time", 0);
  p.validation_time = f.number("simulation_validation_time", 0);
  p.fluorescence_threshold = f.number("fluorescence_threshold", 0);
  p.bins = static_cast<int>(f.number("bins", 100));
  p.lowest_bin = f.number("lowest_bin", 10);
  p.highest_bin = f.number("highest_bin", 10000);
  p.normalize_to_target = f.boolean("normalize_to_target", true);
  p.asynchronous = f.boolean("asynchronous", false);
  p.swarm_size = static_cast<int>(f.number("swarm_size", 50));
  p.iterations = static_cast<int>(f.number("iterations", 100));
  p.algorithm = f.text("algorithm").value_or("Fuzzy Self-Tuning PSO");

  const Ref* pops = f.find("populations");
  if (!pops || (*pops)->t != Obj::T::List || (*pops)->items.empty())
    throw input_error(file, 0, "populations", "missing or empty (expected a list of population rows)");
  Model& model = p.spec.model;
  for (std::size_t r = 0; r < (*pops)->items.size(); ++r) {
    const Ref& row = (*pops)->items[r];
    const std::string where = fmt::format("populations[{}]", r);
    if ((row->t != Obj::T::List && row->t != Obj::T::Tuple) || row->items.size() < 8)
      throw input_error(file, 0, where,
                        "expected a row [name, proportion, mean, sd, mean_min, mean_max, sd_min, sd_max, info]");
    const auto& it = row->items;
    Population pop;
    const auto name = Fields::text_of(it[0]);
    if (!name || name->empty()) throw input_error(file, 0, where + ".name", "expected a non-empty string");
    pop.name = *name;
    const auto proportion = Fields::number_of(it[1]);
    if (!proportion || !(*proportion >= 0 && *proportion <= 1))
      throw input_error(file, 0, pop.name + ".proportion", "expected a number in [0, 1]");
    pop.proportion = *proportion;
    const auto dash = [](const Ref& o) { return o->t == Obj::T::Str && o->s == "-"; };
    PopulationFreedom freedom;
    if (dash(it[2])) {
      pop.quiescent = true;
    } else {
      const auto mean = Fields::number_of(it[2]), sd = Fields::number_of(it[3]);
      if (!mean || !(*mean > 0) || !std::isfinite(*mean))
        throw input_error(file, 0, pop.name + ".mean", "expected a number > 0 (or '-' for a quiescent population)");
      if (!sd || !(*sd >= 0) || !std::isfinite(*sd)) throw input_error(file, 0, pop.name + ".sd", "expected a number >= 0");
      pop.mean = *mean;
      pop.sd = *sd;
      const auto bound = [&](std::size_t k, const char* what) {
        const auto v = Fields::number_of(it[k]);
        if (!v || !std::isfinite(*v)) throw input_error(file, 0, pop.name + "." + what, "expected a number");
        return *v;
      };
      const double mean_lo = bound(4, "mean_min"), mean_hi = bound(5, "mean_max");
      const double sd_lo = bound(6, "sd_min"), sd_hi = bound(7, "sd_max");
      if (mean_lo == 0 && mean_hi == 0) {
        p.unset_bounds.push_back(pop.name + ".mean");
      } else {
        freedom.mean = Range{mean_lo, mean_hi};
      }
      if (sd_lo == 0 && sd_hi == 0) {
        p.unset_bounds.push_back(pop.name + ".sd");
      } else {
        freedom.sd = Range{sd_lo, sd_hi};
      }
    }
    model.populations.push_back(pop);
    p.spec.free.push_back(freedom);
  }
  if (model.populations.size() >= 2)
    for (auto& fr : p.spec.free) fr.proportion = Range{0.0, 1.0};
  model.phi_min = p.fluorescence_threshold;
  if (p.simulation_time > 0) model.times = {p.simulation_time};
  model.start = p.asynchronous ? StartMode::ProcellAsync : StartMode::Sync;
  return p;
}

// --- writing

namespace {

// raw-unicode-escape of UTF-8 text, every non-ASCII or special character as \uXXXX / \UXXXXXXXX.
std::string unicode_line(const std::string& s) {
  std::string out;
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    std::uint32_t cp = c;
    std::size_t n = 1;
    if (c >= 0xF0 && k + 3 < s.size()) {
      cp = ((c & 0x07u) << 18) | ((static_cast<unsigned char>(s[k + 1]) & 0x3Fu) << 12) |
           ((static_cast<unsigned char>(s[k + 2]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[k + 3]) & 0x3Fu);
      n = 4;
    } else if (c >= 0xE0 && k + 2 < s.size()) {
      cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[k + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(s[k + 2]) & 0x3Fu);
      n = 3;
    } else if (c >= 0xC0 && k + 1 < s.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[k + 1]) & 0x3Fu);
      n = 2;
    }
    k += n;
    if (cp >= 0x20 && cp < 0x7F && cp != '\\') {
      out += static_cast<char>(cp);
    } else if (cp <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out += fmt::format("\\U{:08x}", cp);
    }
  }
  return out;
}

struct Writer {
  std::string out;
  void str(const std::string& s) { out += "V" + unicode_line(s) + "\n"; }
  void num(double v) {
    // repr-compatible: always with a decimal point or exponent, so that it reads as a float.
    std::string t = fmt::format("{}", v);
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
    out += "F" + t + "\n";
  }
  void integer(long long v) { out += fmt::format("I{}\n", v); }
  void boolean(bool b) { out += b ? "I01\n" : "I00\n"; }
  void none() { out += "N"; }
  void key(const std::string& k) { str(k); }
};

}  // namespace

std::string prc_bytes(const ProcellProject& p) {
  Writer w;
  w.out = "ccopy_reg\n_reconstructor\n(cproject\nProject\nc__builtin__\nobject\nNtR(d";
  const auto item_text = [&](const std::string& k, const std::optional<std::string>& v) {
    w.key(k);
    if (v) {
      w.str(*v);
    } else {
      w.none();
    }
    w.out += "s";
  };
  const auto item_num = [&](const std::string& k, double v) {
    w.key(k);
    w.num(v);
    w.out += "s";
  };
  const auto item_int = [&](const std::string& k, long long v) {
    w.key(k);
    w.integer(v);
    w.out += "s";
  };
  const auto item_bool = [&](const std::string& k, bool v) {
    w.key(k);
    w.boolean(v);
    w.out += "s";
  };
  item_int("swarm_size", p.swarm_size);
  item_text("project_name", p.project_name);
  item_num("highest_bin", p.highest_bin);
  item_text("algorithm", p.algorithm);
  w.key("populations");
  w.out += "(l";
  const Model& m = p.spec.model;
  for (std::size_t i = 0; i < m.populations.size(); ++i) {
    const Population& pop = m.populations[i];
    const PopulationFreedom fr = i < p.spec.free.size() ? p.spec.free[i] : PopulationFreedom{};
    w.out += "(l";
    w.str(pop.name);
    w.out += "a";
    w.num(pop.proportion);
    w.out += "a";
    if (pop.quiescent) {
      for (int k = 0; k < 6; ++k) {
        w.str("-");
        w.out += "a";
      }
    } else {
      for (double v : {pop.mean, pop.sd, fr.mean ? fr.mean->min : 0.0, fr.mean ? fr.mean->max : 0.0,
                       fr.sd ? fr.sd->min : 0.0, fr.sd ? fr.sd->max : 0.0}) {
        w.num(v);
        w.out += "a";
      }
    }
    w.none();  // info
    w.out += "aa";
  }
  w.out += "s";
  item_text("validation_file", p.validation_file);
  item_bool("normalize_to_target", p.normalize_to_target);
  item_text("target_file", p.target_file);
  item_num("simulation_time", p.simulation_time);
  item_text("initial_file", p.initial_file);
  item_bool("asynchronous", p.asynchronous);
  item_num("lowest_bin", p.lowest_bin);
  item_int("iterations", p.iterations);
  item_num("fluorescence_threshold", p.fluorescence_threshold);
  item_num("simulation_validation_time", p.validation_time);
  item_int("bins", p.bins);
  w.out += "b.";
  return w.out;
}

}  // namespace simkit::prolif
