#include "data/squad.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "core/bounded_read.h"
#include "core/error.h"
#include "data/tokenizer.h"

namespace hpcbench::data {

namespace {

using nlohmann::json;

// Field access that names the file and the JSON path of what is missing.
const json& field(const json& obj, const char* key, json::value_t type, const std::string& where,
                  const std::string& file) {
  if (!obj.is_object()) fail("{}: {} is not a JSON object", file, where);
  auto it = obj.find(key);
  if (it == obj.end()) fail("{}: {} has no \"{}\" field", file, where, key);
  bool ok = it->type() == type ||
            (type == json::value_t::number_integer && it->type() == json::value_t::number_unsigned);
  if (!ok) fail("{}: {}.{} is a {}, expected a {}", file, where, key, it->type_name(), json(type).type_name());
  return *it;
}

// Whether `text` sits at code point `start` of `s` (answer_start counts code
// points, as Python does).
bool text_at(std::string_view s, int64_t start, std::string_view text) {
  if (start < 0) return false;
  size_t i = 0;
  int64_t cp = 0;
  while (i < s.size() && cp < start) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++cp;
  }
  if (cp != start) return false;
  return s.substr(i, text.size()) == text;
}

std::vector<SquadAnswer> read_answers(const json& list, const std::string& where, const std::string& file,
                                      const std::string& context, size_t& mismatched) {
  std::vector<SquadAnswer> out;
  for (size_t k = 0; k < list.size(); ++k) {
    std::string w = fmt::format("{}[{}]", where, k);
    SquadAnswer a;
    a.text = field(list[k], "text", json::value_t::string, w, file).get<std::string>();
    a.answer_start = field(list[k], "answer_start", json::value_t::number_integer, w, file).get<int64_t>();
    if (!text_at(context, a.answer_start, a.text)) {
      // An answer that is not where it says it is would train the model on
      // the wrong span: count it, leave it out.
      ++mismatched;
      continue;
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

SquadDataset load_squad(const std::filesystem::path& path) { return parse_squad(read_file(path, file_limit::kDataset), path.string()); }

SquadDataset parse_squad(std::string_view text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    fail("{} is not valid JSON (at byte {}): {}", file, e.byte, e.what());
  }
  if (!doc.is_object()) fail("{}: the top level is not a JSON object (not a SQuAD file)", file);
  auto vit = doc.find("version");
  if (vit == doc.end()) fail("{}: no \"version\" field (expected \"1.1\" or \"v2.0\")", file);
  if (!vit->is_string()) fail("{}: \"version\" is a {}, expected \"1.1\" or \"v2.0\"", file, vit->type_name());
  SquadDataset ds;
  ds.version = vit->get<std::string>();
  const bool v2 = ds.version == "v2.0" || ds.version == "2.0";
  if (!v2 && ds.version != "1.1" && ds.version != "v1.1")
    fail("{}: unsupported SQuAD version \"{}\" (expected \"1.1\" or \"v2.0\")", file, ds.version);

  const json& data = field(doc, "data", json::value_t::array, "the top level", file);
  for (size_t a = 0; a < data.size(); ++a) {
    std::string wa = fmt::format("data[{}]", a);
    const json& article = data[a];
    std::string title;
    if (article.is_object() && article.contains("title") && article["title"].is_string())
      title = article["title"].get<std::string>();
    const json& paras = field(article, "paragraphs", json::value_t::array, wa, file);
    for (size_t p = 0; p < paras.size(); ++p) {
      std::string wp = fmt::format("{}.paragraphs[{}]", wa, p);
      const std::string context = field(paras[p], "context", json::value_t::string, wp, file).get<std::string>();
      const json& qas = field(paras[p], "qas", json::value_t::array, wp, file);
      for (size_t q = 0; q < qas.size(); ++q) {
        std::string wq = fmt::format("{}.qas[{}]", wp, q);
        SquadExample ex;
        ex.id = field(qas[q], "id", json::value_t::string, wq, file).get<std::string>();
        ex.title = title;
        ex.question = field(qas[q], "question", json::value_t::string, wq, file).get<std::string>();
        ex.context = context;
        ex.answers = read_answers(field(qas[q], "answers", json::value_t::array, wq, file), wq + ".answers", file,
                                  context, ds.mismatched_answers);
        if (v2) {
          ex.is_impossible = field(qas[q], "is_impossible", json::value_t::boolean, wq, file).get<bool>();
          auto pit = qas[q].find("plausible_answers");
          if (pit != qas[q].end() && pit->is_array())
            ex.plausible_answers = read_answers(*pit, wq + ".plausible_answers", file, context, ds.mismatched_answers);
          if (ex.is_impossible) ex.answers.clear();
        }
        ds.examples.push_back(std::move(ex));
      }
    }
  }
  if (ds.mismatched_answers > 0)
    spdlog::warn("{}: {} answer(s) whose text is not at answer_start in the context were left out", file,
                 ds.mismatched_answers);
  return ds;
}

}  // namespace hpcbench::data
