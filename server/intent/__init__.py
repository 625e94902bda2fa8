"""Models fitted on the templates' examples: the intent model, its lexical part and token views,
the acceptance test and score calibration, and how they are kept on disk and in memory."""
