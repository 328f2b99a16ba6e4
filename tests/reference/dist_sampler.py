"""Reference index orders for tests/distributed: torch.utils.data.DistributedSampler
(the sampler every PyTorch data-parallel script uses) over several data set
sizes, world sizes, ranks, seeds, epochs, with and without shuffle and
drop_last. The C++ sampler must reproduce them index for index."""
import json
import os

import torch
from torch.utils.data import DistributedSampler


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


cases = []
for n in (1, 2, 7, 10, 88, 1449):
    for replicas in (1, 2, 3, 4, 8):
        for shuffle in (False, True):
            for drop_last in (False, True):
                for seed, epoch in ((0, 0), (0, 3), (1234, 1)):
                    if not shuffle and (seed, epoch) != (0, 0):
                        continue
                    for rank in sorted({0, replicas - 1, replicas // 2}):
                        s = DistributedSampler(Sized(n), num_replicas=replicas, rank=rank,
                                               shuffle=shuffle, seed=seed, drop_last=drop_last)
                        s.set_epoch(epoch)
                        cases.append({"n": n, "num_replicas": replicas, "rank": rank,
                                      "shuffle": shuffle, "drop_last": drop_last, "seed": seed,
                                      "epoch": epoch, "indices": list(s)})
# A large data set: randperm's algorithm differs for large n.
for rank in (0, 5):
    s = DistributedSampler(Sized(300007), num_replicas=6, rank=rank, shuffle=True, seed=42)
    s.set_epoch(2)
    cases.append({"n": 300007, "num_replicas": 6, "rank": rank, "shuffle": True, "drop_last": False,
                  "seed": 42, "epoch": 2, "indices": list(s)})

out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "dist_sampler.json")
with open(out, "w") as f:
    json.dump(cases, f)
print(f"wrote {len(cases)} cases to {out} (torch {torch.__version__})")
