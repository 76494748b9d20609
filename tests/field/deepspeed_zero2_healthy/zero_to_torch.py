# placeholder: DeepSpeed copies its own script here; left out of the corpus
