"""The local web UI and JSON API (`attnkit serve`): FastAPI app, dynamic batching, static pages."""
