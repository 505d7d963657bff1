# Liger's scripts import reference modules from the checkout's test/ package; so does the fake.
REFERENCE = "huggingface"
