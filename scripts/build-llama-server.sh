#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the llama.cpp that llama-cpp-python 0.3.36 vendors: the remote engine's
# tests start it (README: Team server). Prints the binary's path. The first build took 16 minutes on 2 cores
# shared with another job (about 6 on idle ones); it is kept in the Tandem cache.
exec bash "$(dirname "$0")/build-llama-tool.sh" llama-server
