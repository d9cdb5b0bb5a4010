"""Export a translation run for other engines: CTranslate2 (`ctranslate2_model`) and ONNX (`onnx_graphs`).

An export folder (`bundle`) holds the engine's files, the run's tokenizer model and vocabulary,
and `attnkit-export.json`: which run and checkpoint it came from and the run's decode settings,
so that `ctranslate2_model.translate` and `onnx_runner.translate` tokenize, search and detokenize
as `attnkit translate` does. The `ctranslate2`, `onnx` and `onnxruntime` packages are optional
(`pip install 'attnkit[export]'`); a missing one is one error line naming it. docs/deployment.md
has the commands and what maps to what.
"""
