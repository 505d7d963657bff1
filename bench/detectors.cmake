# detectors: the synthetic evaluation suite and the Liger history evaluation (see
# docs/DETECTION.md). The Liger evaluation imports the CSVs and replays them through the one
# replay `kernelwatch backtest` uses (replay::replay).
add_executable(detectors_synthetic_eval detectors/synthetic_eval.cpp)
kernelwatch_target_defaults(detectors_synthetic_eval)
target_link_libraries(detectors_synthetic_eval PRIVATE kernelwatch::detectors_synthetic)

add_executable(detectors_liger_eval detectors/liger_eval.cpp)
kernelwatch_target_defaults(detectors_liger_eval)
target_link_libraries(detectors_liger_eval PRIVATE kernelwatch::daemon)
target_compile_definitions(detectors_liger_eval PRIVATE
  KW_LIGER_DIR="${PROJECT_SOURCE_DIR}/data/liger")

# Young keys (issue #36): a key's first runs on one host, steps of 5/10/30% (docs/DETECTION.md).
add_executable(detectors_young_keys_eval detectors/young_keys_eval.cpp)
kernelwatch_target_defaults(detectors_young_keys_eval)
target_link_libraries(detectors_young_keys_eval PRIVATE kernelwatch::detectors_synthetic)

# compare (issue #37): A/A failures and the smallest slowdown found, on this machine's CPU.
add_executable(detectors_compare_eval detectors/compare_eval.cpp)
kernelwatch_target_defaults(detectors_compare_eval)
target_link_libraries(detectors_compare_eval PRIVATE kernelwatch::detectors)
