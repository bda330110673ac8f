// Runs every prompt of a fixture's reference file through a model session and checks it: the relative L2 of the
// logits at every position against the float64 reference, then greedy decoding against the reference's ids up to
// the first step whose top-2 margin is under 1e-2 (shared by the cpu and cuda logits tests).
#pragma once

#include <string>

#include "engine/model_session.h"

namespace ft::test {

// model: the fixture directory under tests/data (e.g. "models/qwen3_moe"); chunk: prompt tokens per step (0: all
// at once); label prefixes the printed worst errors.
void check_reference_file(ModelSession& session, const std::string& model, const std::string& file, int32_t chunk,
                          double max_rel_l2, const std::string& label);

}  // namespace ft::test
