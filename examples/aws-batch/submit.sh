#!/bin/bash
# A key-sharded ratesweep run as an AWS Batch array job: child i runs key
# shard i of 8 (ratesweep reads AWS_BATCH_JOB_ARRAY_INDEX, and the count
# from RATESWEEP_SHARDS, which must equal arrayProperties.size), every child
# writing into one run directory on EFS; then a job that depends on the
# whole array merges the shards.
#
# Before: build and push the image (examples/k8s/Dockerfile), put the spec
# and its log on the EFS file system (/runs/spec.yaml naming /runs/logs/...),
# and replace ACCOUNT, REGION and fs-EFS_ID in job-definition.json and the
# queue name in sweep-job.json and merge-job.json.
#
# Usage: examples/aws-batch/submit.sh     (needs the aws CLI and jq)
# A failed child is retried (retryStrategy) and resumes its finished parts;
# if the merge job is cancelled, rerun the failed children, then submit
# merge-job.json again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
aws batch register-job-definition --cli-input-json "file://$here/job-definition.json" >/dev/null
array=$(aws batch submit-job --cli-input-json "file://$here/sweep-job.json" | jq -r .jobId)
merge=$(jq --arg id "$array" '.dependsOn[0].jobId = $id' "$here/merge-job.json" |
	aws batch submit-job --cli-input-json file:///dev/stdin | jq -r .jobId)
echo "array job $array, merge job $merge"
