"""The answering modes of the model endpoint, one module each behind one small interface
(:class:`~runner.model.handlers.base.ModelHandler`): scripted (with its faults), replay and live.
The router that picks one and the HTTP service around it are :mod:`runner.model.server`."""
