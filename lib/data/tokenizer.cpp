#include "data/tokenizer.h"

#include <utf8proc.h>

#include <array>
#include <cstring>

#include "core/bounded_read.h"
#include "core/error.h"

namespace hpcbench::data {

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

inline uint64_t fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * kFnvPrime;
  return h;
}
// The hash of "##" + piece starts from the state after "##", so continuation
// pieces are looked up without building the prefixed string.
const uint64_t kContinuationSeed = fnv(kFnvOffset, "##");

// Decodes one code point; invalid bytes become U+FFFD (which BERT's clean
// text removes anyway) and advance by one byte.
inline char32_t decode_utf8(const unsigned char* p, const unsigned char* end, size_t& len) {
  utf8proc_int32_t cp;
  auto n = utf8proc_iterate(p, end - p, &cp);
  if (n <= 0) {
    len = 1;
    return 0xFFFD;
  }
  len = static_cast<size_t>(n);
  return static_cast<char32_t>(cp);
}

inline void append_utf8(std::string& s, char32_t c) {
  unsigned char buf[4];
  auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  s.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// What BertNormalizer's clean text does with an original character.
enum class Clean : uint8_t { Keep, Drop, Space };

inline Clean clean_class(char32_t c) {
  if (c == 0 || c == 0xFFFD) return Clean::Drop;
  if (c == '\t' || c == '\n' || c == '\r') return Clean::Space;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    // The unicode_categories crate's is_other (Cc, Cf, Co, Cs): controls,
    // format chars such as zero-width spaces, private use. Unassigned code
    // points (Cn) are kept, as Hugging Face keeps them.
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return Clean::Drop;
    // White_Space minus the controls already dropped above.
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return Clean::Space;
    default:
      return Clean::Keep;
  }
}

// BertNormalizer's is_chinese_char: the CJK Unified Ideographs blocks, as
// tokenizers 0.23 lists them (from U+2B920, not the original BERT U+2B820).
inline bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

constexpr bool is_ascii_punct(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

// BertPreTokenizer splits off ASCII punctuation (which includes symbols such
// as $ + < = > ^ ` | ~) and every Unicode P* character.
inline bool is_punct(char32_t c) {
  if (c < 128) return is_ascii_punct(c);
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Classes of ASCII characters, so that the common case needs no utf8proc call.
enum class Ascii : uint8_t { Drop, Space, Punct, Word };
constexpr std::array<Ascii, 128> make_ascii_table() {
  std::array<Ascii, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if (c == '\t' || c == '\n' || c == '\r' || c == ' ')
      t[c] = Ascii::Space;
    else if (c < 32 || c == 127)
      t[c] = Ascii::Drop;
    else if (is_ascii_punct(static_cast<char32_t>(c)))
      t[c] = Ascii::Punct;
    else
      t[c] = Ascii::Word;
  }
  return t;
}
constexpr auto kAscii = make_ascii_table();

// Per-thread scratch: the current word, normalized, with the byte offset of
// each of its characters and the original code point each came from.
struct Scratch {
  std::string word;
  std::vector<uint32_t> char_bytes;  // byte offset of each char, plus the end
  std::vector<int32_t> char_orig;    // original code point index of each char
  void clear() {
    word.clear();
    char_bytes.clear();
    char_orig.clear();
  }
};

bool python_isspace(char32_t c) {
  if (c < 128) return c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31);
  if (utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ZS) return true;
  const auto* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return p->bidi_class == UTF8PROC_BIDI_CLASS_WS || p->bidi_class == UTF8PROC_BIDI_CLASS_B ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

}  // namespace

std::string_view python_lstrip(std::string_view s) {
  auto* p = reinterpret_cast<const unsigned char*>(s.data());
  auto* end = p + s.size();
  while (p < end) {
    size_t len;
    char32_t c = decode_utf8(p, end, len);
    if (!python_isspace(c)) break;
    p += len;
  }
  return s.substr(static_cast<size_t>(p - reinterpret_cast<const unsigned char*>(s.data())));
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

WordPieceTokenizer WordPieceTokenizer::from_file(const std::filesystem::path& vocab_txt) {
  std::string text;
  try {
    text = read_file_bounded(vocab_txt, file_limit::kVocabulary);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("cannot read the vocabulary file {}: {}", vocab_txt.string(), e.what());
  }
  if (text.empty()) fail("vocabulary file {} is empty", vocab_txt.string());
  // Python's readlines() in text mode: \n, \r\n and \r all end a line.
  std::vector<std::string> vocab;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find_first_of("\r\n", i);
    if (j == std::string::npos) {
      vocab.emplace_back(text.substr(i));
      break;
    }
    vocab.emplace_back(text.substr(i, j - i));
    i = j + ((text[j] == '\r' && j + 1 < text.size() && text[j + 1] == '\n') ? 2 : 1);
  }
  return WordPieceTokenizer(std::move(vocab), vocab_txt.string());
}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, std::string origin)
    : vocab_(std::move(vocab)), origin_(std::move(origin)) {
  if (vocab_.empty()) fail("vocabulary {} is empty", origin_);
  size_t cap = 16;
  while (cap < vocab_.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  fingerprint_ = kFnvOffset;
  for (size_t id = 0; id < vocab_.size(); ++id) {
    insert(vocab_[id], static_cast<int32_t>(id));
    fingerprint_ = fnv(fnv(fingerprint_, vocab_[id]), "\n");
  }
  auto special = [&](std::string_view name) {
    int32_t id = token_id(name);
    if (id < 0) fail("vocabulary {} has no {} token", origin_, name);
    return id;
  };
  cls_ = special("[CLS]");
  sep_ = special("[SEP]");
  pad_ = special("[PAD]");
  unk_ = special("[UNK]");
  for (const char* name : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    if (int32_t id = token_id(name); id >= 0) specials_.emplace_back(name, id);
}

void WordPieceTokenizer::insert(const std::string& key, int32_t id) {
  bool cont = key.size() > 2 && key[0] == '#' && key[1] == '#';
  std::string_view piece = cont ? std::string_view(key).substr(2) : std::string_view(key);
  uint64_t h = cont ? fnv(kContinuationSeed, piece) : fnv(kFnvOffset, piece);
  max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id < 0) {
      s = Slot{h, static_cast<uint32_t>(id), id};
      return;
    }
    if (s.hash == h && vocab_[s.key] == key) {
      s.id = id;  // a later duplicate line wins, as in a Python dict
      s.key = static_cast<uint32_t>(id);
      return;
    }
  }
}

int32_t WordPieceTokenizer::lookup(uint64_t h, std::string_view piece, bool continuation) const {
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash != h) continue;
    const std::string& key = vocab_[s.key];
    if (continuation) {
      if (key.size() == piece.size() + 2 && key[0] == '#' && key[1] == '#' &&
          std::memcmp(key.data() + 2, piece.data(), piece.size()) == 0)
        return s.id;
    } else if (key == piece) {
      return s.id;
    }
  }
}

int32_t WordPieceTokenizer::token_id(std::string_view token) const {
  bool cont = token.size() > 2 && token[0] == '#' && token[1] == '#';
  std::string_view piece = cont ? token.substr(2) : token;
  return lookup(cont ? fnv(kContinuationSeed, piece) : fnv(kFnvOffset, piece), piece, cont);
}

void WordPieceTokenizer::wordpiece(std::string_view word, const std::vector<uint32_t>& char_bytes,
                                   const std::vector<int32_t>& char_orig, std::vector<Token>& out) const {
  const size_t nchars = char_orig.size();
  if (nchars == 0) return;
  if (nchars > kMaxInputCharsPerWord) {
    out.push_back({unk_, char_orig.front(), char_orig.back() + 1});
    return;
  }
  const size_t first_out = out.size();
  // Prefix hashes of word[start..k) for every char boundary k, computed in
  // one left-to-right pass per start; then probed longest first.
  uint64_t hashes[kMaxInputCharsPerWord + 1];
  size_t start = 0;
  while (start < nchars) {
    const uint32_t b0 = char_bytes[start];
    const bool cont = start > 0;
    uint64_t h = cont ? kContinuationSeed : kFnvOffset;
    size_t last = start;
    for (size_t k = start; k < nchars; ++k) {
      if (char_bytes[k + 1] - b0 > max_piece_bytes_) break;
      h = fnv(h, word.substr(char_bytes[k], char_bytes[k + 1] - char_bytes[k]));
      hashes[k + 1] = h;
      last = k + 1;
    }
    int32_t id = -1;
    size_t end = last;
    for (; end > start; --end) {
      id = lookup(hashes[end], word.substr(b0, char_bytes[end] - b0), cont);
      if (id >= 0) break;
    }
    if (id < 0) {
      out.resize(first_out);
      out.push_back({unk_, char_orig.front(), char_orig.back() + 1});
      return;
    }
    out.push_back({id, char_orig[start], char_orig[end - 1] + 1});
    start = end;
  }
}

namespace {

// The special token (its name and id) `rest` starts with, or null.
const std::pair<std::string, int32_t>* special_at(std::string_view rest,
                                                  const std::vector<std::pair<std::string, int32_t>>& specials) {
  for (const auto& s : specials)
    if (rest.substr(0, s.first.size()) == s.first) return &s;
  return nullptr;
}

// A non-ASCII character as BertNormalizer leaves it, each resulting
// character handed to `emit`: NFD, then lowercase (full mapping: İ becomes
// i + U+0307), then nonspacing marks dropped. HF strips accents before
// lowercasing; the order only matters for İ, whose U+0307 HF drops too.
template <typename Emit>
void normalize(char32_t c, Emit&& emit) {
  utf8proc_int32_t nfd[32];
  int boundclass = 0;
  auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), nfd, 32, UTF8PROC_DECOMPOSE, &boundclass);
  if (n < 0 || n > 32) {
    nfd[0] = static_cast<utf8proc_int32_t>(c);
    n = 1;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) {
    char32_t d = static_cast<char32_t>(nfd[k]);
    if (d == 0x130) {
      emit(U'i');
      continue;
    }
    if (utf8proc_category(static_cast<utf8proc_int32_t>(d)) == UTF8PROC_CATEGORY_MN) continue;
    char32_t l = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(d)));
    if (l != d && utf8proc_category(static_cast<utf8proc_int32_t>(l)) == UTF8PROC_CATEGORY_MN) continue;
    emit(l);
  }
}

}  // namespace

void WordPieceTokenizer::encode(std::string_view text, std::vector<Token>& out) const {
  thread_local Scratch sc;
  sc.clear();
  auto flush = [&] {
    if (sc.char_orig.empty()) return;
    sc.char_bytes.push_back(static_cast<uint32_t>(sc.word.size()));
    wordpiece(sc.word, sc.char_bytes, sc.char_orig, out);
    sc.clear();
  };
  auto push_char = [&](char32_t c, int32_t orig) {
    sc.char_bytes.push_back(static_cast<uint32_t>(sc.word.size()));
    sc.char_orig.push_back(orig);
    if (c < 128)
      sc.word.push_back(static_cast<char>(c));
    else
      append_utf8(sc.word, c);
  };
  // A normalized character goes through BertPreTokenizer: punctuation is a
  // word of its own, anything else extends the current word.
  auto emit = [&](char32_t c, int32_t orig) {
    if (is_punct(c)) {
      flush();
      push_char(c, orig);
      flush();
    } else {
      push_char(c, orig);
    }
  };
  auto* p = reinterpret_cast<const unsigned char*>(text.data());
  auto* end = p + text.size();
  int32_t cp = 0;
  for (; p < end; ++cp) {
    if (*p == '[') {
      // Special tokens written in the text are matched before normalization
      // (Hugging Face's added tokens), so "[SEP]" in a context is [SEP].
      std::string_view rest(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p));
      if (const auto* special = special_at(rest, specials_)) {
        const auto& [name, id] = *special;
        flush();
        out.push_back({id, cp, cp + static_cast<int32_t>(name.size())});
        p += name.size();
        cp += static_cast<int32_t>(name.size()) - 1;
        continue;
      }
    }
    if (*p < 128) {
      char32_t c = *p++;
      switch (kAscii[c]) {
        case Ascii::Drop:
          break;
        case Ascii::Space:
          flush();
          break;
        case Ascii::Punct:
          flush();
          push_char(c, cp);
          flush();
          break;
        case Ascii::Word:
          push_char((c >= 'A' && c <= 'Z') ? c + 32 : c, cp);
          break;
      }
      continue;
    }
    size_t len;
    char32_t c = decode_utf8(p, end, len);
    p += len;
    Clean cl = clean_class(c);
    if (cl == Clean::Drop) continue;
    if (cl == Clean::Space) {
      flush();
      continue;
    }
    const bool cjk = is_chinese(c);
    if (cjk) flush();
    normalize(c, [&](char32_t l) { emit(l, cp); });
    if (cjk) flush();
  }
  flush();
}

std::vector<Token> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<Token> out;
  encode(text, out);
  return out;
}

}  // namespace hpcbench::data
