#include "specs/model_shape.h"

namespace hpcbench::strategies {

double layer_activation_bytes(const ModelShape& m, int64_t rows, int64_t seq, int e, bool dropout, bool scores,
                              int64_t tp) {
  const double sbh = static_cast<double>(seq) * static_cast<double>(rows) * static_cast<double>(m.hidden);
  const double d = dropout ? 1 : 0;
  const double t = static_cast<double>(tp);
  const double replicated = 4.0 * e + 2 * d;
  const double split = (4.0 * e + 2.0 * e * static_cast<double>(m.intermediate) / static_cast<double>(m.hidden)) / t;
  double total = sbh * (replicated + split);
  if (scores)
    total += static_cast<double>(m.heads) * static_cast<double>(seq) * static_cast<double>(seq) *
             static_cast<double>(rows) * (e + d + e * d) / t;
  return total;
}

}  // namespace hpcbench::strategies
