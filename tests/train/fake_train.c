/*
 * fake_train.c - a `train` program as `onnxc train` generates it, on the
 * hand-written step of fake_model.h (tests/train/program.sh runs it).
 */
#include "fake_model.h"

int main(int argc, char **argv) { return rt_train_main(&fake_train_model, argc, argv); }
