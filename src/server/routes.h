// Route handlers, one file per protocol family; each registers its paths on the server.
#pragma once

#include <httplib.h>

#include "server/server_state.h"

namespace ft::server {

void add_openai_chat_routes(httplib::Server& http, ServerState& state);       // /v1/chat/completions
void add_openai_completion_routes(httplib::Server& http, ServerState& state); // /v1/completions
void add_openai_responses_routes(httplib::Server& http, ServerState& state);  // /v1/responses
void add_anthropic_routes(httplib::Server& http, ServerState& state);         // /v1/messages[/count_tokens]
void add_control_routes(httplib::Server& http, ServerState& state);  // /health /v1/models /v1/stats /metrics /v1/requests

}  // namespace ft::server
