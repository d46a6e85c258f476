#!/usr/bin/env bash
# The kill -9 campaign (kill_campaign.sh), short: 5 kills at random moments of a tiny
# model that checkpoints every step; each leaves a checkpoint that loads and a log that
# resumes without duplicates, and the finished runs equal the uninterrupted one bit for
# bit. The long campaign's figures are in docs/reliability.md.
. "$(dirname "$0")/lib.sh"
command -v python3 > /dev/null || { echo "skip: kill_campaign.sh checks the log with python3"; exit 77; }
bash "$(dirname "$0")/kill_campaign.sh" 5 200 "${ANDREA_KILL_SEED:-1}"
