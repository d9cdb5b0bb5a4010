"""The translation family's data tools: Multi30k and WMT 2014 downloads (`fetch`, `wmt14`), the
parallel-corpus check (`check`), corpus splits (`corpus`), synthetic tasks (`synthetic`), encoding
for training (`prepare`), and the `attnkit data check|fetch` verbs that call them (`commands`)."""
