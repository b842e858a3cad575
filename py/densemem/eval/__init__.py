"""Evaluation: LoCoMo and SciFact quality, branch rows, paired comparisons and plots.

The harness only loads data, calls the public SQL functions and scores what they
return; it never filters, fuses or ranks. Data is read at run time from the path
given on the command line (for example ../shared/data), never copied into the
repository.
"""
