#!/usr/bin/env bash
# Builds llama.cpp's own llama-speculative-simple from the llama.cpp that llama-cpp-python 0.3.36 vendors,
# for side-by-side figures in `tandem bench --llama-speculative BIN`. Prints the binary's path.
# About 6 minutes on 2 cores, once (kept in the Tandem cache).
exec bash "$(dirname "$0")/build-llama-tool.sh" llama-speculative-simple
