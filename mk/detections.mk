# Sigma detections (detections/rules): compiled for Splunk into the add-on by `make splunk-app`, and
# for Elastic into elasticsearch/detection_rules.ndjson (committed; a test checks it is up to date).
.PHONY: detections

detections: $(STAMP)
	$(BIN)/python tools/compile_detections.py --elastic
