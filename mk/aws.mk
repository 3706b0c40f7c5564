# The Lambda deployment artifact: build/lambda/ (template.yaml's CodeUri) and dist/lambda.zip.
# Wheels for the template's runtime and architecture (python3.13, arm64), never for this machine:
# the code is pure Python except orjson and cryptography (the google extra: the SecOps sink signs
# its token requests; 15 MB of the package's 46 MB, 5 MB of its 24 MB zip), whose manylinux aarch64
# wheels pip picks here. boto3 is vendored so the S3 conditional requests the state store needs do
# not depend on the SDK version the Lambda runtime happens to ship.
LAMBDA_PYTHON   := 3.13
LAMBDA_PLATFORM := --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64
LAMBDA_DIR      := build/lambda
LAMBDA_ZIP      := dist/lambda.zip
# The functions' handlers (template.yaml): the package holds them and what they can import, no more.
LAMBDA_ENTRIES  := handlers.aws_lambda handlers.aws_planner handlers.aws_worker

.PHONY: lambda-package bench-import

lambda-package: $(STAMP)
	rm -rf $(LAMBDA_DIR) build/lambda-wheel $(LAMBDA_ZIP)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir build/lambda-wheel .
	$(BIN)/python -m pip install --quiet --target $(LAMBDA_DIR) --implementation cp \
		--python-version $(LAMBDA_PYTHON) $(LAMBDA_PLATFORM) --only-binary=:all: \
		"$$(ls build/lambda-wheel/*.whl)[aws,google]"
	rm -rf $(LAMBDA_DIR)/bin
	$(BIN)/python tools/runtime_modules.py prune $(LAMBDA_DIR) $(LAMBDA_ENTRIES)
	find $(LAMBDA_DIR) -name __pycache__ -prune -exec rm -rf {} +
	test -n "$$(ls $(LAMBDA_DIR)/orjson/*aarch64*.so)"  # the right orjson, or fail the build
	test "$$(od -An -tx1 -j18 -N2 $(LAMBDA_DIR)/cryptography/hazmat/bindings/_rust.abi3.so)" = " b7 00"  # aarch64
	mkdir -p dist
	cd $(LAMBDA_DIR) && ../../$(BIN)/python -m zipfile -c ../../$(LAMBDA_ZIP) *
	@du -sh $(LAMBDA_DIR) $(LAMBDA_ZIP)

# Cold import time of the handler against a bare `import boto3`, measured in the same run.
bench-import: $(STAMP)
	$(BIN)/python bench/import_time.py

bench: bench-import

# The Security Lake sink's pyarrow as a Lambda layer (dist/securitylake-layer.zip; template.yaml's
# SecurityLakeLayerArn once published), for the same runtime and architecture. What writing Parquet
# never loads is left out: Flight, the S3/GCS/Azure/HDFS filesystems, ORC, the C++ tests, headers and
# Cython sources, and the copies a wheel makes of the symbolic links to libarrow_python (pyarrow
# 26.0.1: 151 MB unpacked, 89 MB after, a 31 MB zip; no numpy needed).
PYARROW_VERSION := 26.0.1
LAYER_DIR       := build/layer-securitylake
LAYER_ZIP       := dist/securitylake-layer.zip
PYARROW_UNUSED  := tests include src _flight* libarrow_flight* libarrow_python_flight* _s3fs* \
                   libarrow_s3* _azurefs* _gcsfs* _hdfs* _orc* _dataset_orc* _pyarrow_cpp_tests*

.PHONY: lambda-layer-securitylake

lambda-layer-securitylake: $(STAMP)
	rm -rf $(LAYER_DIR) $(LAYER_ZIP)
	$(BIN)/python -m pip install --quiet --target $(LAYER_DIR)/python --implementation cp --no-deps \
		--python-version $(LAMBDA_PYTHON) $(LAMBDA_PLATFORM) --only-binary=:all: pyarrow==$(PYARROW_VERSION)
	cd $(LAYER_DIR)/python/pyarrow && rm -rf $(PYARROW_UNUSED) && find . \( -name '*.pxd' -o -name '*.pyx' \
		-o -name '*.pxi' -o -name '*.h' -o -name 'libarrow_python*.so' -o -name 'libarrow_python*.so.*.*.*' \) -delete
	rm -rf $(LAYER_DIR)/python/bin && find $(LAYER_DIR) -name __pycache__ -prune -exec rm -rf {} +
	test -n "$$(ls $(LAYER_DIR)/python/pyarrow/libparquet*aarch64* $(LAYER_DIR)/python/pyarrow/_parquet*aarch64*.so 2>/dev/null)"
	mkdir -p dist
	cd $(LAYER_DIR) && ../../$(BIN)/python -m zipfile -c ../../$(LAYER_ZIP) python
	@du -sh $(LAYER_DIR) $(LAYER_ZIP)
