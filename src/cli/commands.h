// Every `ft` subcommand: int cmd_NAME(argc, argv), argv[0] being the command name. One file each.
#pragma once

#include "freetoken/status.h"

namespace ft::cli {

int cmd_logits(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_chat_template(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_shell(int argc, char** argv);
int cmd_ctl(int argc, char** argv);

// Prints "ft CMD: message" on stderr and returns exit code 1 (or 0 for --help).
int report_error(const char* command, const Status& status);

}  // namespace ft::cli
