mod agent;
mod agent_tools;
mod chat;
mod config_cli;
mod mock_llm_tests;
mod provider;
