#include "data/features.h"

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "data/squad.h"
#include "data/tokenizer.h"

namespace hpcbench::data {

namespace {

void resize_rows(Features& f, size_t n, bool offsets) {
  const size_t cells = n * static_cast<size_t>(f.seq_len);
  f.input_ids.resize(cells);
  f.token_type_ids.resize(cells);
  f.attention_mask.resize(cells);
  f.start_positions.resize(n);
  f.end_positions.resize(n);
  f.example_index.resize(n);
  if (offsets) {
    f.offset_begin.resize(cells);
    f.offset_end.resize(cells);
  }
}

// Windows and labels of one example appended to `out`, as run_qa.py builds them.
class ExampleFeaturizer {
 public:
  ExampleFeaturizer(const WordPieceTokenizer& tok, const FeatureConfig& cfg, bool train)
      : tok_(tok), cfg_(cfg), train_(train), L_(static_cast<size_t>(cfg.max_seq_length)) {
    raw_begin_.resize(L_);
    raw_end_.resize(L_);
  }

  void add(const SquadExample& ex, int32_t example_index, Features& out) {
    question_.clear();
    context_.clear();
    tok_.encode(python_lstrip(ex.question), question_);
    if (cfg_.max_query_length > 0 && question_.size() > static_cast<size_t>(cfg_.max_query_length))
      question_.resize(static_cast<size_t>(cfg_.max_query_length));
    tok_.encode(ex.context, context_);
    cut_windows(ex);

    const bool answered = !ex.is_impossible && !ex.answers.empty();
    int64_t start_char = 0, end_char = 0;
    if (answered) {
      start_char = ex.answers.front().answer_start;
      end_char = start_char + static_cast<int64_t>(count_code_points(ex.answers.front().text));
    }
    for (auto [ws, we] : windows_) {
      const size_t row = out.size();
      auto [first_ctx, last_ctx] = write_row(out, row, ws, we);
      out.example_index[row] = example_index;
      auto [s, e] = label(answered && last_ctx > first_ctx, start_char, end_char, first_ctx, last_ctx - 1);
      out.start_positions[row] = s;
      out.end_positions[row] = e;
    }
  }

 private:
  // Hugging Face's truncation="only_second" with stride: windows of `room`
  // context tokens, each starting room - stride after the previous one.
  void cut_windows(const SquadExample& ex) {
    const size_t qn = question_.size(), cn = context_.size();
    windows_.clear();
    if (qn + cn + 3 <= L_) {
      windows_.emplace_back(0, cn);
      return;
    }
    if (qn + 3 >= L_)
      fail("question {} has {} tokens, leaving no room for its context in max_seq_length {}", ex.id, qn,
           cfg_.max_seq_length);
    const size_t room = L_ - qn - 3;
    if (static_cast<size_t>(cfg_.doc_stride) >= room)
      fail("doc_stride {} must be smaller than the {} context tokens a window of question {} holds "
           "(max_seq_length {} minus its {} question tokens and 3 special tokens)",
           cfg_.doc_stride, room, ex.id, cfg_.max_seq_length, qn);
    const size_t step = room - static_cast<size_t>(cfg_.doc_stride);
    for (size_t s = 0;; s += step) {
      size_t stop = std::min(s + room, cn);
      windows_.emplace_back(s, stop);
      if (stop == cn) break;
    }
  }

  // Row `row` of `out`: [CLS] question [SEP] context[ws, we) [SEP] and
  // padding, with the raw offsets (and for evaluation the context's
  // offsets); returns the context's first and one-past-last position.
  std::pair<size_t, size_t> write_row(Features& out, size_t row, size_t ws, size_t we) {
    resize_rows(out, row + 1, !train_);
    int32_t* ids = out.input_ids.data() + row * L_;
    int32_t* types = out.token_type_ids.data() + row * L_;
    int32_t* mask = out.attention_mask.data() + row * L_;
    std::fill(raw_begin_.begin(), raw_begin_.end(), 0);
    std::fill(raw_end_.begin(), raw_end_.end(), 0);
    size_t k = 0;
    ids[k++] = tok_.cls_id();
    for (const Token& t : question_) {
      raw_begin_[k] = t.begin;
      raw_end_[k] = t.end;
      ids[k++] = t.id;
    }
    ids[k++] = tok_.sep_id();
    const size_t first_ctx = k;
    for (size_t i = ws; i < we; ++i) {
      raw_begin_[k] = context_[i].begin;
      raw_end_[k] = context_[i].end;
      types[k] = 1;
      ids[k++] = context_[i].id;
    }
    const size_t last_ctx = k;  // one past
    types[k] = 1;
    ids[k++] = tok_.sep_id();
    std::fill(mask, mask + k, 1);
    std::fill(ids + k, ids + L_, tok_.pad_id());
    if (!train_) {
      int32_t* ob = out.offset_begin.data() + row * L_;
      int32_t* oe = out.offset_end.data() + row * L_;
      std::fill(ob, ob + L_, -1);
      std::fill(oe, oe + L_, -1);
      for (size_t i = first_ctx; i < last_ctx; ++i) {
        ob[i] = raw_begin_[i];
        oe[i] = raw_end_[i];
      }
    }
    return {first_ctx, last_ctx};
  }

  // prepare_train_features' label loop, on the raw offsets of the padded row
  // (special and padding tokens (0, 0)), quirks included: the start scan
  // runs on past the context into [SEP] and padding when the answer begins
  // in the last context token.
  std::pair<int32_t, int32_t> label(bool answered, int64_t sc, int64_t ec, size_t ts, size_t te) const {
    if (!answered) return {0, 0};
    if (!(raw_begin_[ts] <= sc && raw_end_[te] >= ec)) return {0, 0};
    size_t s = ts;
    while (s < L_ && raw_begin_[s] <= sc) ++s;
    ptrdiff_t e = static_cast<ptrdiff_t>(te);
    while (e >= 0 && raw_end_[static_cast<size_t>(e)] >= ec) --e;
    return {static_cast<int32_t>(s) - 1, static_cast<int32_t>(e + 1)};
  }

  const WordPieceTokenizer& tok_;
  const FeatureConfig& cfg_;
  bool train_;
  size_t L_;
  std::vector<Token> question_, context_;
  std::vector<std::pair<size_t, size_t>> windows_;
  std::vector<int64_t> raw_begin_, raw_end_;
};

void append(Features& dst, Features&& src) {
  auto cat = [](std::vector<int32_t>& a, std::vector<int32_t>& b) { a.insert(a.end(), b.begin(), b.end()); };
  cat(dst.input_ids, src.input_ids);
  cat(dst.token_type_ids, src.token_type_ids);
  cat(dst.attention_mask, src.attention_mask);
  cat(dst.start_positions, src.start_positions);
  cat(dst.end_positions, src.end_positions);
  cat(dst.example_index, src.example_index);
  cat(dst.offset_begin, src.offset_begin);
  cat(dst.offset_end, src.offset_end);
}

}  // namespace

void validate(const FeatureConfig& cfg) {
  if (cfg.max_seq_length < 8 || cfg.max_seq_length > 65536)
    fail("--max-seq-length {} is out of range (8 to 65536)", cfg.max_seq_length);
  if (cfg.doc_stride < 0 || cfg.doc_stride >= cfg.max_seq_length)
    fail("--doc-stride {} must be at least 0 and smaller than --max-seq-length {}", cfg.doc_stride,
         cfg.max_seq_length);
  if (cfg.max_query_length < 1) fail("--max-query-length {} must be at least 1", cfg.max_query_length);
}

Features build_features(const std::vector<SquadExample>& examples, const WordPieceTokenizer& tokenizer,
                        const FeatureConfig& cfg, bool train, unsigned threads) {
  validate(cfg);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // Below a few hundred examples a thread costs more than it saves.
  threads = static_cast<unsigned>(std::clamp<size_t>(examples.size() / 256, 1, threads));

  // Contiguous chunks, concatenated in order: the result does not depend on
  // the number of threads.
  std::vector<Features> parts(threads);
  std::vector<std::exception_ptr> errors(threads);
  auto work = [&](unsigned t) {
    try {
      size_t lo = examples.size() * t / threads, hi = examples.size() * (t + 1) / threads;
      Features& f = parts[t];
      f.seq_len = cfg.max_seq_length;
      ExampleFeaturizer fz(tokenizer, cfg, train);
      for (size_t i = lo; i < hi; ++i) fz.add(examples[i], static_cast<int32_t>(i), f);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  Features out = std::move(parts[0]);
  out.seq_len = cfg.max_seq_length;
  for (unsigned t = 1; t < threads; ++t) append(out, std::move(parts[t]));
  return out;
}

}  // namespace hpcbench::data
