// `hpcbench fetch`: models from the Hugging Face Hub and the SQuAD JSONs into
// the caches that `hpcbench run --model <id> --train-data squad_v2` reads.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "core/error.h"
#include "hub/cache.h"
#include "hub/fetch.h"
#include "hub/resolve.h"

namespace hpcbench::cli {
namespace {

struct FetchOptions {
  std::vector<std::string> names;
  std::string revision;
};

int run_fetch(const FetchOptions& o) {
  for (const auto& name : o.names) {
    if (hub::is_dataset_name(name)) {
      if (!o.revision.empty()) fail("--revision {}: applies to models only, not to {}", o.revision, name);
      for (const auto& p : hub::fetch_dataset(name)) fmt::print("{}\n", p.string());
      continue;
    }
    auto [id, rev] = hub::split_revision(name);
    if (!o.revision.empty()) rev = o.revision;
    auto m = hub::fetch_model(id, rev);
    for (const auto& p : m.files) fmt::print("{}\n", p.string());
  }
  return 0;
}

}  // namespace

Action add_fetch(CLI::App& app) {
  auto o = std::make_shared<FetchOptions>();
  auto* cmd = app.add_subcommand(
      "fetch",
      "Download models (config.json, vocab.txt, weights) from the Hugging Face Hub into its cache, and the SQuAD "
      "JSONs (squad, squad_v2) into hpcbench's; honours HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN, "
      "HF_HUB_OFFLINE and the proxy variables. Prints the cached files' paths.");
  cmd->add_option("names", o->names, "Model ids (bert-base-uncased, org/name[@revision]) and/or squad, squad_v2")
      ->required();
  cmd->add_option("--revision", o->revision, "Branch, tag or commit of the models (default main)");
  return [o] { return run_fetch(*o); };
}

}  // namespace hpcbench::cli
