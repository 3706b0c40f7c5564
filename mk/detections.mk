# Sigma detections (detections/rules): compiled for Splunk into the add-on by `make splunk-app`, and
# for Elastic into elasticsearch/detection_rules.ndjson, for Microsoft Sentinel into
# sentinel/analytics_rules.json and for Google SecOps into secops/rules/ (committed; tests check they
# are up to date).
.PHONY: detections

detections: $(STAMP)
	$(BIN)/python tools/compile_detections.py --elastic --sentinel --secops
