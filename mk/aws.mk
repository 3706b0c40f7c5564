# The Lambda deployment artifact: build/lambda/ (template.yaml's CodeUri) and dist/lambda.zip.
# Wheels for the template's runtime and architecture (python3.13, arm64), never for this machine:
# the code is pure Python except orjson, whose manylinux aarch64 wheel pip picks here. boto3 is
# vendored so the S3 conditional requests the state store needs do not depend on the SDK version
# the Lambda runtime happens to ship.
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
		"$$(ls build/lambda-wheel/*.whl)[aws]"
	rm -rf $(LAMBDA_DIR)/bin
	$(BIN)/python tools/runtime_modules.py prune $(LAMBDA_DIR) $(LAMBDA_ENTRIES)
	find $(LAMBDA_DIR) -name __pycache__ -prune -exec rm -rf {} +
	test -n "$$(ls $(LAMBDA_DIR)/orjson/*aarch64*.so)"  # the right orjson, or fail the build
	mkdir -p dist
	cd $(LAMBDA_DIR) && ../../$(BIN)/python -m zipfile -c ../../$(LAMBDA_ZIP) *
	@du -sh $(LAMBDA_DIR) $(LAMBDA_ZIP)

# Cold import time of the handler against a bare `import boto3`, measured in the same run.
bench-import: $(STAMP)
	$(BIN)/python bench/import_time.py

bench: bench-import
