mod agent;
mod agent_tools;
mod chat;
mod config_cli;
mod http;
mod mock_llm_tests;
mod provider;
mod security;
